"""Configs by name, command-line overrides and sweeps (``plab run CONFIG key=value ... [-m]``).

* A config is a YAML file, ``package:NAME.yaml``, or the name of a config shipped in the package
  (``fs1999/table1_d4``: ``perceptron_lab/configs/fs1999/table1_d4.yaml``); :func:`packaged_configs`
  lists them.
* ``key=value`` replaces one key of the resolved config, e.g. ``training.epochs=3`` or
  ``training.checkpoints=[1,2]``; values are YAML (``null``, numbers, lists). Every override is
  validated with the config by the same schema (:func:`perceptron_lab.config.load.with_overrides`), so an
  unknown key gets the same did-you-mean. ``dataset.path`` and ``dataset.test_path`` given on the
  command line are relative to the current folder.
* With ``multirun`` (``-m``) a comma-separated value sweeps: ``kernel.degree=2,3,4
  training.epochs=1,10`` adds those keys to ``evaluation.grid`` and the run covers the product as
  one grid (:class:`perceptron_lab.run.evaluation.Grid`), each point in its own part. Only grid keys
  can be swept.
* Overrides compose with what the config wrote (:func:`perceptron_lab.config.load.with_overrides`):
  ``algorithm.name=X`` keeps the keys the config wrote that X has (a NORMA config's ``eta`` and
  ``lambda`` for the perceptron), gives the keys it did not write X's defaults, and refuses in one
  line a written key X does not have. A sweep ``-m algorithm.name=a,b`` runs each algorithm with the
  keys it has (a written key none of them has is refused), and ``plab config show`` with the same
  arguments prints the config the points start from; each point's config is what the run trains.
* An overridden run is a variant: it is not scored against the paper table its config names
  (unless ``paper=`` is overridden too), and it writes to its own folder, ``<the config's
  folder>/<key-value_...>`` (sorted by key, shell-safe: :func:`override_dirname`), never to the
  base run's (:func:`override_dir`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from perceptron_lab import constants as C
from perceptron_lab.config.load import ExperimentConfig, with_overrides
from perceptron_lab.config.checks import _did_you_mean
from perceptron_lab.config.schema import PACKAGE_CONFIG_DIR, SCHEMA
from perceptron_lab.errors import ConfigError

QUICKSTART = "quickstart.yaml"
#: Keys whose change says where a run goes or what it is called, not what it computes: they do not
#: name the folder of an overridden run.
_NAMING_KEYS = ("name", "description", "output.dir")
#: The longest folder name made from overrides before it is shortened (with a hash of the whole).
MAX_DIRNAME = 120
#: Characters of a value that stay in a folder name (others become ``+``).
_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]+")
#: Values written as they are, with no hash: a name made of them reads back unambiguously.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9.]+(,[A-Za-z0-9.]+)*")
_LEGACY_SAFE = re.compile(r"[^A-Za-z0-9._=,+\-\[\]]")


# ----------------------------------------------------------------------------- configs by name


def packaged_configs() -> list[tuple[str, Path]]:
    """(name, file) of every config shipped in the package, e.g. ``('fs1999/table1_d4', …)``."""
    root = PACKAGE_CONFIG_DIR
    return sorted((p.relative_to(root).with_suffix("").as_posix(), p) for p in root.rglob("*.yaml"))


def config_summary(path: Path) -> str:
    """The first comment line of a config file (its title), or ''."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("#"):
                    text = line.lstrip("#").strip()
                    if text:
                        return text
                elif line.strip():
                    return ""
    except OSError:
        pass
    return ""


def resolve_config(arg: str | None) -> str:
    """What :func:`perceptron_lab.config.load.load_config` reads for CONFIG: the packaged quickstart
    (None), an existing file, ``package:NAME.yaml``, or the name of a packaged config."""
    if arg is None:
        return C.PACKAGE_CONFIG_PREFIX + QUICKSTART
    if arg.startswith(C.PACKAGE_CONFIG_PREFIX) or os.path.exists(arg):
        return arg
    stem = arg[:-5] if arg.endswith(".yaml") else (arg[:-4] if arg.endswith(".yml") else arg)
    names = [n for n, _ in packaged_configs()]
    if stem in names:
        return f"{C.PACKAGE_CONFIG_PREFIX}{stem}.yaml"
    hint = _did_you_mean(stem, names, 0.6)
    raise ConfigError(f"{arg}: no such config file, and no packaged config of that name"
                      + (f" ({hint})" if hint else "") + "; 'plab configs' lists the packaged configs")


# ----------------------------------------------------------------------------- overrides


@dataclass(frozen=True)
class Override:
    """One ``key=value`` argument: the key, the value as typed and the parsed value(s) (more than
    one only in a sweep)."""

    key: str
    text: str
    values: tuple

    @property
    def sweep(self) -> bool:
        return len(self.values) > 1


def is_override(arg: str) -> bool:
    """Whether a command-line word is ``key=value`` rather than a config."""
    key = arg.split("=", 1)[0]
    return "=" in arg and bool(key) and not os.path.exists(arg) and "/" not in key


def _split_top(text: str) -> list[str]:
    """``text`` split at commas outside brackets and quotes (``[1,2],[3]`` -> two items)."""
    out, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += ch
    out.append(cur)
    return out


def _yaml_value(arg: str, text: str):
    try:
        return yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"override {arg!r}: the value is not valid YAML ({' '.join(problem.split())})") from None


def parse_overrides(args, multirun: bool = False) -> list[Override]:
    """The ``key=value`` arguments, their values parsed as YAML; with ``multirun`` a value with
    commas outside brackets is a list of values to sweep."""
    out: dict[str, Override] = {}
    for arg in args:
        key, sep, text = arg.partition("=")
        key = key.strip()
        if not sep or not key or " " in key:
            raise ConfigError(f"override {arg!r}: write overrides as key=value, e.g. training.epochs=3")
        if key in out:
            raise ConfigError(f"override {arg!r}: {key} is given twice ({out[key].key}={out[key].text} before)")
        pieces = _split_top(text) if multirun else [text]
        values = tuple(_yaml_value(arg, p) for p in pieces)
        out[key] = Override(key, text, values)
    return list(out.values())


def sweepable_keys() -> list[str]:
    """The keys ``-m`` can sweep: those ``evaluation.grid`` accepts (and ``dataset.params.*``)."""
    return [p.path for p in SCHEMA if p.grid and "." in p.path]


def _absolute_paths(overrides: list[Override]) -> list[Override]:
    """dataset.path and dataset.test_path given on the command line are relative to the current folder."""
    out = []
    for o in overrides:
        if o.key in ("dataset.path", "dataset.test_path") and isinstance(o.values[0], str) \
                and o.values[0].strip() and not os.path.isabs(o.values[0]):
            o = Override(o.key, o.text, (os.path.abspath(o.values[0]),))
        out.append(o)
    return out


def apply_overrides(cfg: ExperimentConfig, overrides: list[Override]) -> ExperimentConfig:
    """``cfg`` with the overrides applied and the sweeps added to ``evaluation.grid`` (a sweep of a
    key the grid already has replaces its values), validated by the config schema. An override that
    changes what is computed drops the config's ``paper``: the run is a variant, not written in the
    paper's layout nor scored against it (and so never counted in the report), unless the overrides
    set ``paper`` themselves. ``algorithm.name=X`` runs X: on a config whose grid is over
    ``algorithm.name`` it takes that key out of the grid (which would otherwise set another name at
    each point), and it composes with the config's keys as
    :func:`perceptron_lab.config.load.with_overrides` says."""
    overrides = _absolute_paths(overrides)
    changes = {o.key: o.values[0] for o in overrides if not o.sweep}
    sweeps = {o.key: list(o.values) for o in overrides if o.sweep}
    keys = sweepable_keys()
    for key, values in sweeps.items():
        if key in keys or (key.startswith("dataset.params.") and len(key) > len("dataset.params.")):
            continue
        known = [p.path for p in SCHEMA]
        if key in known:
            raise ConfigError(f"-m {key}={next(o.text for o in overrides if o.key == key)}: {key} cannot be "
                              "swept (it is not a grid parameter: it shapes the whole run); give it one value, "
                              "or run the values one by one")
        hint = _did_you_mean(key, keys, 0.75)
        raise ConfigError(f"-m {key}: unknown key" + (f" ({hint})" if hint else "")
                          + "; keys that can be swept: " + ", ".join(keys))
    if cfg.paper is not None and "paper" not in changes \
            and any(o.key not in _NAMING_KEYS + ("output.figures",) for o in overrides):
        changes["paper"] = None  # a variant is not the paper's table: not scored, not in the report
    if sweeps:
        if "evaluation.grid" in changes:
            raise ConfigError("override evaluation.grid cannot be combined with -m sweeps; sweep with -m only")
        changes["evaluation.grid"] = {**cfg.evaluation.grid, **sweeps}
    grid = changes.get("evaluation.grid", cfg.evaluation.grid)
    if "algorithm.name" in changes and isinstance(grid, Mapping) and "algorithm.name" in grid \
            and not any(o.key == "evaluation.grid" for o in overrides):
        # algorithm.name=X runs X: out of a grid that would set the name of every point again
        changes["evaluation.grid"] = {k: v for k, v in grid.items() if k != "algorithm.name"}
    return with_overrides(cfg, changes) if changes else cfg


def override_dirname(overrides: list[Override]) -> str | None:
    """The folder name of an overridden run, shell-safe (letters, digits and ``.`` ``_`` ``-``
    ``+`` only): ``key-value`` of each override that changes what is computed, sorted by key,
    joined by ``_``, a sweep's values joined by ``+`` (``kernel.degree-2+3_training.epochs-3``).
    A value with other characters (``-1``, a path, a list) is written with them replaced by ``+``
    and the name ends in ``-`` and 8 hex digits of a hash of the overrides as typed, which keeps
    names distinct; so does a name longer than :data:`MAX_DIRNAME`, which is shortened. The
    overrides as typed are in the run's run.json. None without such overrides."""
    items = sorted((o.key, o.text.strip()) for o in overrides if o.key not in _NAMING_KEYS)
    if not items:
        return None
    full = ",".join(f"{k}={v}" for k, v in items)
    exact = all(_PLAIN_VALUE.fullmatch(v) for _, v in items)
    name = "_".join(f"{k}-{_UNSAFE.sub('+', v.replace(',', '+')).strip('+')}" for k, v in items)
    if not exact or len(name) > MAX_DIRNAME:
        digest = hashlib.sha256(full.encode()).hexdigest()[:8]
        name = f"{name[:MAX_DIRNAME]}-{digest}"
    return name


def legacy_dirname(overrides: list[Override]) -> str | None:
    """The folder name earlier versions gave an overridden run (``key=value,...``), which a run
    resumes in when it exists (:func:`override_dir`)."""
    items = sorted((o.key, o.text.strip()) for o in overrides if o.key not in _NAMING_KEYS)
    if not items:
        return None
    full = ",".join(f"{k}={v}" for k, v in items)
    safe = _LEGACY_SAFE.sub("_", full)
    if safe != full or len(safe) > MAX_DIRNAME or safe.startswith((".", "-")):
        digest = hashlib.sha256(full.encode()).hexdigest()[:8]
        safe = f"{safe.lstrip('.-')[:MAX_DIRNAME]}-{digest}"
    return safe


def override_dir(base: ExperimentConfig, cfg: ExperimentConfig, overrides: list[Override]) -> Path:
    """Where an overridden run writes: ``output.dir`` when an override sets it, else the base
    config's folder (``runs/<name>`` or its ``output.dir``) plus :func:`override_dirname`."""
    if any(o.key == "output.dir" for o in overrides):
        return cfg.run_dir
    name = override_dirname(overrides)
    root = cfg.run_dir if any(o.key == "name" for o in overrides) else base.run_dir
    if not name:
        return root
    old = legacy_dirname(overrides)
    if not (root / name).exists() and old and (root / old / "run.json").is_file():
        return root / old   # a folder named as before this version: resume there
    return root / name


def dropped_checkpoints(base: ExperimentConfig, cfg: ExperimentConfig, overrides: list[Override]) -> str | None:
    """The warning for checkpoints a run will not evaluate because they lie beyond its
    ``training.epochs`` (:func:`perceptron_lab.config.load.with_overrides` drops them: an override of
    ``training.epochs`` keeps the checkpoints up to the new value, and each value of a grid over
    it does the same for its points), or None when none are dropped. The config's own last epoch
    is not counted: it moves to the new value."""
    def beyond(c, epochs):
        return sorted(x for x in c.training.checkpoints if x != c.training.epochs and x > epochs + C.EPOCH_TOL)

    def show(xs):
        return ", ".join(f"{x:g}" for x in xs)

    given = {o.key: o for o in overrides}
    parts = []
    if "training.epochs" in given and not given["training.epochs"].sweep and "training.checkpoints" not in given:
        lost = beyond(base, cfg.training.epochs)
        if lost:
            parts.append(f"training.epochs={cfg.training.epochs:g} drops checkpoint(s) {show(lost)}")
    for e in cfg.evaluation.grid.get("training.epochs", ()):
        lost = beyond(cfg, float(e))
        if lost:
            parts.append(f"the grid points with training.epochs={float(e):g} drop checkpoint(s) {show(lost)}")
    if not parts:
        return None
    return ("; ".join(parts) + " (beyond the last epoch; set training.checkpoints to choose the checkpoints "
            "yourself)")


def load_with_overrides(config: str | None, args=(), multirun: bool = False):
    """(the base config, the config to run, the overrides) for ``plab run CONFIG key=value ...``.
    A first argument that is ``key=value`` (and no file) is an override of the packaged quickstart."""
    from perceptron_lab.config.load import load_config

    args = tuple(args)
    if config is not None and is_override(config):
        config, args = None, (config, *args)
    base = load_config(resolve_config(config))
    overrides = parse_overrides(args, multirun)
    try:
        cfg = apply_overrides(base, overrides)
    except ConfigError as exc:
        listed = [o for o in overrides if len(_split_top(o.text)) > 1]
        if multirun or not listed:
            raise
        problems = exc.problems[:-1] + [exc.problems[-1] + f" (to sweep {listed[0].key} over several values, "
                                        "add -m)"]
        raise ConfigError(problems) from None
    return base, cfg, overrides
