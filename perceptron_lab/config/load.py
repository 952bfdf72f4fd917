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

Three modules: this one (the dataclasses, the validator and the public API),
:mod:`perceptron_lab.config.schema` (the schema table and the checks) and
:mod:`perceptron_lab.config.reading` (reading files and resolving ``extends``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable


from perceptron_lab import constants as C
from perceptron_lab.config.checks import (  # noqa: F401  (re-exported)
    _FILE_STEM, _PATH_CUTOFF, _REQUIRED, INVALID, _did_you_mean, _fmt_num, _ParamScalar, _plain, _render_path, _show)
from perceptron_lab.config.schema import ALGORITHM_TITLES, algorithms_using, off_text, same_setting
from perceptron_lab.config.schema import (  # noqa: F401  (re-exported)
    _TOP_KEYS, MAX_CONFIG_BYTES, PACKAGE_CONFIG_DIR, SCHEMA, SECTIONS, Param, _attr, _params_of)
from perceptron_lab.config.algorithm import rule_alma_primal, rule_budget_rules, rule_primal_kernel
from perceptron_lab.config.dataset import drop_other_source, rule_dataset_source
from perceptron_lab.config.reading import _origins, _package_source, _read_yaml, _resolve, _Source
from perceptron_lab.errors import ConfigError

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

# =========================================================================== dataclasses


@dataclass(frozen=True, kw_only=True)
class DatasetConfig:
    """Which data to load and how to preprocess it: a registered or synthetic dataset (``name``), or a
    file of the user's own (``path``, read by :mod:`perceptron_lab.datasets.user`)."""

    #: None when ``path`` names a file of the user's own.
    name: str | None
    #: Use only the first N training (test) examples; None uses all of them.
    train_size: int | None
    test_size: int | None
    #: One of :data:`perceptron_lab.constants.PREPROCESS`.
    preprocess: str
    #: Generator arguments of a synthetic dataset (e.g. f, margin, noise, seed).
    params: dict
    #: Append the test split to the training split (cross-validation over the whole data set).
    merge_splits: bool = False
    #: How promoters' instance name enters the features (:data:`perceptron_lab.constants.INSTANCE_NAME_READINGS`).
    instance_name: str = "drop"
    #: A data file of one's own, its test file (relative to the config's folder), its format (``auto``:
    #: from the extension; csv, tsv, libsvm, npz), and for CSV/TSV the label and categorical columns.
    path: str | None = None
    test_path: str | None = None
    format: str = "auto"
    label: str | None = None
    categorical: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """How messages name the data: the dataset's name, or the file's name."""
        return self.name if self.name is not None else Path(self.path or "data").name


@dataclass(frozen=True, kw_only=True)
class KernelConfig:
    """The kernel K(x, y). ``degree`` is 1 and ``sigma`` None for kernels that do not use them;
    ``fit_intercept`` adds the constant 1 (:mod:`perceptron_lab.engine.intercept`)."""

    type: str
    degree: int
    scale: float
    sigma: float | None
    fit_intercept: bool = False


@dataclass(frozen=True, kw_only=True)
class AlgorithmConfig:
    """The learner. Parameters of the algorithm not selected by ``name`` are None.

    Perceptron: ``eta``, ``theta_init`` (a number or ``'avg_sq_norm'``), ``C`` (a number or
    ``'theta_init'``), ``tau``, ``lambda_``, ``lambda_term`` (``'indicator'`` or ``'diagonal'``, see
    :data:`perceptron_lab.constants.LAMBDA_TERMS`), ``alpha_bound`` (None: unbounded), ``form``.
    ALMA (Gentile 2001): ``alpha``, ``B`` (None: 1/alpha; ``'sqrt8/alpha'``: sqrt(8)/alpha), ``C``, ``p``.
    Budgeted algorithms (:mod:`perceptron_lab.engine.budget`): ``budget`` (None: no limit); ``eta``
    (Projectron, NORMA); ``lambda_``, ``rho``, ``schedule`` (NORMA).
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
    budget: int | None = None
    rho: float | None = None
    schedule: str | None = None
    lambda_term: str | None = None


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
    #: Stratify the folds by class (False: a shuffled split, the folds of every recorded run).
    stratify: bool = False


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
    def written(self) -> frozenset | None:
        """The keys the config wrote, as dotted paths (``'algorithm.eta'``; ``'dataset.params'``
        for any key under it): those of its file and of every file it ``extends``, and those set by
        :func:`with_overrides`; every other key carries its default. None where not known (a copy
        made by :func:`dataclasses.replace`): every key then counts as written. Recorded by the
        validator beside the config's fields, so not part of its value (equality, :meth:`to_dict`,
        hashes)."""
        return self.__dict__.get("_written")

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


_SECTION_TYPES = {"dataset": DatasetConfig, "kernel": KernelConfig, "algorithm": AlgorithmConfig,
                  "training": TrainingConfig, "prediction": PredictionConfig, "evaluation": EvaluationConfig,
                  "output": OutputConfig}


# =========================================================================== the validator


class _Validator:
    """Walks :data:`SCHEMA` over one mapping and collects every problem."""

    def __init__(self, origins: dict, default_file: str, default_name: str, dataset_names,
                 written: frozenset | None = None):
        self.origins, self.default_file = origins, default_file
        self.default_name, self.dataset_names = default_name, dataset_names
        self.lines: list[str] = []
        self.values: dict[str, dict] = {}
        self.given: dict[tuple, Any] = {}
        self._written = written

    @property
    def written(self) -> frozenset:
        """The keys the config wrote (:attr:`ExperimentConfig.written`): as given by
        :func:`with_overrides`, else every key of the mapping validated."""
        if self._written is None:
            return frozenset(".".join(map(str, k)) for k in self.given)
        return self._written

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
        offed: set = set()
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
                        if p.key in raw and not _is_neutral(raw[p.key], p.neutral) and path not in offed:
                            offed.add(path)  # a key listed for several algorithms is reported once
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
        self.line(at, off_text(p, shown, sel, _show))

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
        assert p.when is not None   # a key without a selector returned in the loop
        self.line(at, f"{_render_path(at)}: " + off_text(p, "", section.get(p.when[0]), _show))
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
        cfg = ExperimentConfig(name=top["name"], description=top["description"], paper=top["paper"],
                               source=source, **sections)
        object.__setattr__(cfg, "_written", self.written)   # ExperimentConfig.written
        return cfg


def _is_neutral(value: Any, neutral: Any) -> bool:
    if neutral is None or value is None:
        return value is neutral
    if isinstance(neutral, str):
        return value == neutral
    return not isinstance(value, bool) and isinstance(value, numbers.Real) and value == neutral


# ---- rules across keys: each reads validated values and skips when any of them is INVALID


def _valid(*values) -> bool:
    return all(v is not INVALID for v in values)


def _rule_checkpoints(v: _Validator) -> None:
    tr = v.values["training"]
    epochs: Any = tr.get("epochs")   # a config's value: checked here
    cps: Any = tr.get("checkpoints")
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


def _rule_grid_algorithms(v: _Validator) -> None:
    """A grid over ``algorithm.name`` runs each of its algorithms with the keys of the config that
    algorithm uses (:func:`with_overrides`); a key the config wrote that none of them uses would
    change nothing, and is refused."""
    alg, grid = v.values["algorithm"], v.values["evaluation"].get("grid")
    name = alg.get("name")
    if not _valid(name, grid) or not isinstance(grid, Mapping) or "algorithm.name" not in grid:
        return
    names, written = grid["algorithm.name"], v.written
    unused = {}
    for p in _params_of("algorithm"):
        if p.when is None or p.path not in written or not p.applies(lambda _k: name) or p.key in unused:
            continue
        users = algorithms_using(p.path)
        if any(n in users for n in names):
            continue
        value = alg.get(p.key, INVALID)
        if _valid(value) and not _is_neutral(value, p.neutral):
            unused[p.key] = users
    if unused:
        keys = ", ".join(f"algorithm.{k} = {v.shown('algorithm', k)}" for k in unused)
        them = "it" if len(unused) == 1 else "them"
        users_text = "; ".join(f"algorithm.{k}: {', '.join(u)}" for k, u in unused.items())
        v.line(("algorithm", next(iter(unused))),
               f"{keys}: {'it is' if len(unused) == 1 else 'they are'} used by no algorithm of evaluation.grid "
               f"(algorithm.name: {', '.join(names)}); remove {them} from the config, or add to the grid an "
               f"algorithm that uses {them} ({users_text})")


_COMBINATIONS: tuple[Callable[[_Validator], None], ...] = (
    rule_budget_rules,
    rule_dataset_source,
    rule_alma_primal,
    rule_primal_kernel,
    _rule_checkpoints,
    _rule_nested_grid,
    _rule_grid_algorithms,
)


_UNCHECKED = object()  # dataset_names: do not check dataset.name against a list


def _known_dataset_names(names: Iterable[str] | None):
    if names is _UNCHECKED:
        return None
    if names is None:
        try:
            from perceptron_lab.datasets import registry
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
            origins_extra: dict | None = None, written: frozenset | None = None) -> ExperimentConfig:
    if problems:
        raise ConfigError(problems)
    data, origins = result
    if origins_extra:
        origins.update(origins_extra)
    validator = _Validator(origins, src.label, default_name or _default_name(src.label),
                           _known_dataset_names(dataset_names), written)
    return validator.run(data, src.label)


# =========================================================================== public API


def load_config(path: str | os.PathLike, dataset_names: Iterable[str] | None = None) -> ExperimentConfig:
    """Read, resolve (``extends``) and validate the config at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A YAML config file, or ``package:NAME.yaml`` for a config packaged with plab (in
        ``perceptron_lab/configs``).
    dataset_names : iterable of str, optional
        The valid ``dataset.name`` values (the synthetic datasets are always valid). By default
        they come from the dataset registry, and are not checked when the registry cannot be
        imported.

    Returns
    -------
    ExperimentConfig
        The typed, validated config, every ``extends`` resolved and every default filled in.

    Raises
    ------
    ConfigError
        Listing every problem found, one line each (a missing file, YAML that does not parse,
        an unknown key with a did-you-mean, a value out of range), e.g.
        ``bad.yaml: training.epochs must be a positive number, got -3``; exit status 2 on the
        command line.

    Examples
    --------
    >>> from perceptron_lab.config.load import load_config
    >>> cfg = load_config("package:quickstart.yaml")
    >>> cfg.dataset.name, cfg.algorithm.name, cfg.training.epochs
    ('sonar', 'perceptron', 100.0)
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
        _Validator({}, src.label, "", None).run(d, src.label)  # type: ignore[unreachable]  # untyped callers: raises with the template message
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
    ``with_overrides(cfg, **{"kernel.degree": 3})``. Overrides compose with what the config
    wrote (:attr:`ExperimentConfig.written`): the keys of its file and of every file it
    ``extends`` -- a base file is written by its author as much as the file that extends it;
    only the schema's defaults count as not written -- and those of earlier overrides.

    * Changing ``algorithm.name`` keeps every key the config wrote that is the same setting of
      the new algorithm (:func:`~perceptron_lab.config.schema.same_setting`: one row of
      :data:`SCHEMA` applies to both, so a perceptron's ``eta`` stays with the perceptron and a
      Projectron's with the Projectron++, but NORMA's learning rate is not the perceptron's),
      and gives every key it did not
      write the new algorithm's default (NORMA's ``eta`` 0.1, not the perceptron's 1; the
      budgeted algorithms' prediction rules). A key the config wrote that the new algorithm does
      not use is refused, in one line naming it and the ways out (remove it, override it to null,
      or sweep over both algorithms) -- never dropped silently; one that carries a null (e.g.
      ``alpha_bound: null``) changes nothing and goes. When the new name is one of the values of
      ``evaluation.grid`` for ``algorithm.name`` (a grid point, as
      :func:`perceptron_lab.run.plan.make_plan` resolves it), each point uses the keys its
      algorithm has and leaves the others: a key no algorithm of the grid uses is refused when
      the config is validated. (``plab run CONFIG algorithm.name=X`` takes ``algorithm.name`` out
      of such a grid: :func:`perceptron_lab.config.overrides.apply_overrides`.)
    * Changing another selector (``kernel.type``, ``evaluation.mode``) drops the parameters that
      belonged to the old choice only.
    * Changing ``training.epochs`` keeps the intermediate checkpoints up to the new value and
      moves the final one; setting ``dataset.path`` drops ``dataset.name`` and setting
      ``dataset.name`` drops the keys of a file of one's own.

    Problems caused by an override are reported against ``<source> (override)``.
    """
    changes: dict[Any, Any] = dict(overrides or {})   # its keys are checked below: a caller may pass any
    changes.update(dotted)
    data = cfg.to_dict()
    for path in changes:
        if not isinstance(path, str) or not path:
            raise ConfigError(f"{cfg.source or '<dict>'} (override): override keys must be dotted "
                              f"parameter paths such as 'algorithm.tau', got {_show(path)}")
    label = f"{cfg.source or '<dict>'} (override)"
    written = _put_back_written(cfg, data)
    renamed = "algorithm.name" in changes and changes["algorithm.name"] != cfg.algorithm.name
    if renamed:   # key=null with a new algorithm: the old algorithm's value goes (not a setting of the new one)
        for path in [p for p, v in changes.items() if v is None and isinstance(p, str) and p.startswith("algorithm.")
                     and not same_setting(p, cfg.algorithm.name, changes["algorithm.name"])]:
            del changes[path]
            data.get("algorithm", {}).pop(path.split(".", 1)[1], None)
            written = written - {path}
    changed = {_key_path(path) for path in changes}
    unused = []
    if renamed:
        grid = changes.get("evaluation.grid", cfg.evaluation.grid)
        point = isinstance(grid, Mapping) and changes["algorithm.name"] in grid.get("algorithm.name", ())
        unused = _compose_algorithm(data, written, changed, cfg.algorithm.name, changes["algorithm.name"], point)
    # parameters whose meaning depends on another selector that changes
    off_keys = []
    for p in SCHEMA:   # key=null with a new selector value the key does not apply to: the key goes
        sel_path = f"{p.section}.{p.when[0]}" if p.when is not None and p.section != "algorithm" else None
        if sel_path in changes and p.path in changes and changes[p.path] is None \
                and not p.applies(lambda _k: changes[sel_path]):
            del changes[p.path]
            data.get(p.section, {}).pop(p.key, None)
            written = written - {p.path}
    changed = {_key_path(path) for path in changes}
    for p in SCHEMA:
        if p.when is None or p.section == "algorithm" or p.path in changes:
            continue
        sel_path = f"{p.section}.{p.when[0]}"
        if sel_path in changes and p.key in data.get(p.section, {}):
            new = changes[sel_path]
            same = p.applies(lambda _k: new) and p.applies(lambda k: getattr(getattr(cfg, p.section), k))
            if not same:
                value = data[p.section].pop(p.key, None)
                # a key the config wrote is never dropped without a word, except at a grid point of
                # a grid over the selector (each point keeps the keys that apply to it)
                grid = changes.get("evaluation.grid", cfg.evaluation.grid)
                at_point = isinstance(grid, Mapping) and new in grid.get(sel_path, ())
                if p.path in written and not at_point and not _is_neutral(value, p.neutral):
                    off_keys.append((p.path, value, sel_path, new))
    drop_other_source(data.get("dataset", {}), changes)
    if "training.epochs" in changes and "training.checkpoints" not in changes:
        epochs: Any = changes["training.epochs"]  # an invalid value is reported by the validator
        top = float(epochs) + C.EPOCH_TOL if not isinstance(epochs, bool) and isinstance(epochs, numbers.Real) \
            else float("inf")
        data["training"]["checkpoints"] = [c for c in cfg.training.checkpoints if c != cfg.training.epochs and c <= top]
    written = frozenset(w for w in written if _has(data, w)) | changed
    origins_extra = {}
    for path, value in changes.items():
        parts = path.split(".")
        node = data
        for n, part in enumerate(parts[:-1]):
            if not isinstance(node.get(part), dict):
                node[part] = {}
                origins_extra[tuple(parts[: n + 1])] = label  # a section the override made up
            node = node[part]
        node[parts[-1]] = value
        origins_extra[tuple(parts)] = label
        if isinstance(value, Mapping):
            origins_extra.update(_origins(value, label, tuple(parts)))
    src = _Source(cfg.source or "<dict>", Path(cfg.source or "<dict>"))
    result = (data, _origins(data, src.label))
    # an unchanged dataset name was checked when cfg was built, possibly against another list
    names = None if "dataset.name" in changes else _UNCHECKED
    out = _finish(result, [], src, names, default_name=cfg.name, origins_extra=origins_extra, written=written)
    if unused:   # the rest is valid: say what the new algorithm would leave unused
        raise ConfigError(_unused_line(label, cfg.algorithm.name, out.algorithm.name, unused))
    if off_keys:   # the same for a key of another selector (kernel.type, evaluation.mode)
        keys = ", ".join(f"{path} = {_show(value)}" for path, value, _, _ in off_keys)
        sel_path, new = off_keys[0][2], off_keys[0][3]
        them = "it" if len(off_keys) == 1 else "them"
        nulls = " ".join(f"{path}=null" for path, *_ in off_keys)
        raise ConfigError(f"{label}: {sel_path} = {_show(new)}: {keys}, which the config sets, "
                          f"{'is' if len(off_keys) == 1 else 'are'} not used with {sel_path} = {_show(new)}; "
                          f"remove {them} from the config or override {them} in the same call ({nulls})")
    return out


def _key_path(path: str) -> str:
    """The key a dotted override path sets, as :attr:`ExperimentConfig.written` names it
    (``dataset.params.noise`` -> ``dataset.params``)."""
    parts = path.split(".")
    return ".".join(parts[:2]) if parts[0] in SECTIONS else parts[0]


def _has(data: Mapping, path: str) -> bool:
    section, _, key = path.partition(".")
    return section in data if not key else isinstance(data.get(section), Mapping) and key in data[section]


def _put_back_written(cfg: ExperimentConfig, data: dict) -> frozenset:
    """Put the ``algorithm`` keys ``cfg`` wrote but ``data`` (``cfg.to_dict()``) leaves out back
    into ``data`` (``to_dict`` omits a default given for :attr:`Param.omit_default`), so that they
    compose like the others; return the keys ``cfg`` wrote (every key of ``data`` when not known)."""
    if cfg.written is None:
        return frozenset(f"{s}.{k}" if s in SECTIONS else s for s in data
                         for k in (data[s] if s in SECTIONS else (None,)))
    obj, body = cfg.algorithm, data.setdefault("algorithm", {})
    for p in _params_of("algorithm"):
        if p.path in cfg.written and p.key not in body and p.applies(lambda k: getattr(obj, _attr("algorithm", k))):
            body[p.key] = _plain(getattr(obj, p.attr))
    return cfg.written


def _compose_algorithm(data: dict, written: frozenset, changed: set, old: str, new: Any, point: bool) -> list:
    """Prepare ``data`` (``cfg.to_dict()``) for ``algorithm.name`` = ``new`` (from ``old``): keys not
    written and not overridden go (the validator fills in the new algorithm's defaults); written
    ``algorithm`` keys that are not one setting of ``old`` and ``new``
    (:func:`~perceptron_lab.config.schema.same_setting`) go too, and are returned as (path, value) unless they carry a null
    or ``new`` is a ``point`` of the config's grid over ``algorithm.name`` (:func:`with_overrides`)."""
    body = data.get("algorithm", {})
    if not isinstance(new, str) or new not in C.ALGORITHMS:   # the validator names the bad value
        for p in _params_of("algorithm"):
            if p.when is not None and p.path not in changed:
                body.pop(p.key, None)
        return []
    unused = []
    for section in SECTIONS:
        items = data.get(section) or {}
        for key in list(items):
            path = f"{section}.{key}"
            if path in changed:
                continue
            if path not in written:
                del items[key]
            elif section == "algorithm" and not same_setting(path, old, new):
                value = items.pop(key)
                if not point and not _is_neutral(value, next(p.neutral for p in _params_of(section) if p.key == key)):
                    unused.append((path, value))
    return unused


def _unused_line(label: str, old: str, new: str, unused: list) -> str:
    """The one line refusing keys written for algorithm ``old`` that an override to ``new`` leaves unused."""
    keys = ", ".join(f"{path} = {_show(value)}" for path, value in unused)
    them = "it" if len(unused) == 1 else "them"
    nulls = " ".join(f"{path}=null" for path, _ in unused)
    settings = "a setting" if len(unused) == 1 else "settings"
    return (f"{label}: algorithm.name = {new!r}: {keys}, which the config sets for "
            f"{ALGORITHM_TITLES.get(old, old)}, {'is' if len(unused) == 1 else 'are'} not {settings} of "
            f"{ALGORITHM_TITLES.get(new, new)} (a key of the same name there is another setting, or none); remove "
            f"{them} from the config, override {them} in the same call ({nulls}, or the new algorithm's values), "
            f"or sweep -m algorithm.name={old},{new} to run each algorithm with the keys it uses")


def config_hash(cfg: ExperimentConfig, length: int = C.CONFIG_HASH_LENGTH) -> str:
    """Short sha256 hex digest of the canonical JSON of ``cfg.to_dict()`` (sorted keys)."""
    text = json.dumps(cfg.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:length]
