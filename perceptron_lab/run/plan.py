"""The plan: a config resolved once into everything its run needs.

:func:`make_plan` reads the config (and the dataset it names) and returns a :class:`Plan`, an
immutable record of the run: its units (grid point x fold x inner fold x permutation) and their
training seeds, the parts that persist them and the key each part must carry, the resolved config
of every grid point, the training steps and evaluation checkpoints of each unit, the size estimate
the limits were checked on, and what run.json records of the config (its hash, the settings that
determine the numbers, its exactness). Everything downstream of :func:`make_plan` -- the executors,
the units, the outputs -- reads the plan.

Work is persisted in *parts*: without a grid, one part per unit (such runs are few and long, e.g. a
full MNIST permutation); with a grid, one part per grid point holding all its folds, inner folds
and permutations (such runs are many and small); with a grid over the algorithm's settings alone,
the linear kernel and integer features (:func:`fold_shared`), one part per fold holding all its
grid points, whose evaluation shares one kernel block
(:func:`~perceptron_lab.model.predict.evaluate_shared`); the same for single passes of the dual
perceptron with a polynomial kernel (:func:`fold_lockstep`), whose grid points also train in
lockstep. Every part's rows depend only on the plan and the part, so results are byte-identical
for any number of jobs and after any interruption.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np

from perceptron_lab.config.load import ExperimentConfig, with_overrides
from perceptron_lab.datasets.base import Dataset
from perceptron_lab.engine.families import FAMILY_BUDGET, FAMILY_PERCEPTRON, algorithm
from perceptron_lab.engine.kernels import exact32_ok
from perceptron_lab.errors import ConfigError
from perceptron_lab.model.bounds import check_run_size
from perceptron_lab.model.exactness import exactness
from perceptron_lab.run.evaluation import Grid
from perceptron_lab.run.spec import UnitSpec, unit_spec
from perceptron_lab.run.store import code_fingerprint, data_fingerprint, part_key

RESULT_COLUMNS = ["dataset", "kernel", "degree", "algorithm", "params", "grid_point", "fold",
                  "permutation", "epoch", "rule", "normalized", "class", "metric", "value"]
#: Nested cross-validation adds the inner fold of a unit and the plan of a selection row.
NESTED_COLUMNS = RESULT_COLUMNS + ["inner_fold", "search"]



def result_columns(cfg: ExperimentConfig) -> list[str]:
    return NESTED_COLUMNS if cfg.evaluation.mode == "nested" else RESULT_COLUMNS




@dataclass
class Unit:
    """One training run: a grid point, a fold (-1 for a held-out test set), an inner fold (nested
    cross-validation; -1 for an outer unit) and a permutation."""

    grid_point: int
    grid_values: dict
    fold: int
    permutation: int
    inner_fold: int = -1

    @property
    def key(self) -> str:
        if self.inner_fold < 0:
            return f"g{self.grid_point:03d}_f{self.fold:+03d}_p{self.permutation:03d}"
        return f"g{self.grid_point:03d}_f{self.fold:+03d}_i{self.inner_fold:02d}_p{self.permutation:03d}"


@dataclass
class Part:
    """Units persisted together in ``parts/<key>.csv``: all units of one grid point, or one unit,
    or (``shared``) the units of every grid point on one fold (``grid_point`` -1, no values)."""

    key: str
    grid_point: int
    grid_values: dict
    units: list
    shared: bool = False


def grid_points(cfg: ExperimentConfig):
    """The grid points of a config as {dotted path: value} dicts (one empty point without a grid):
    the cartesian product of evaluation.grid, or with evaluation.search the union of the plans'
    value products per setting (see :class:`perceptron_lab.run.evaluation.Grid`)."""
    return Grid.from_config(cfg).points


def _fold_pairs(cfg: ExperimentConfig):
    """(fold, inner_fold) of the units of one grid point and permutation, in run order."""
    ev = cfg.evaluation
    if ev.mode == "holdout":
        return [(-1, -1)]
    if ev.mode == "kfold":
        return [(k, -1) for k in range(ev.folds)]
    outer = [-1] if ev.outer == "holdout" else list(range(ev.folds))
    return [(k, j) for k in outer for j in [-1] + list(range(ev.inner_folds))]


def plan_units(cfg: ExperimentConfig, has_test_split: bool, grid: Grid | None = None):
    """Every unit of a config, grid point by grid point (of ``grid``, the config's :class:`Grid`,
    when given)."""
    ev = cfg.evaluation
    needs_test = ev.mode == "holdout" or (ev.mode == "nested" and ev.outer == "holdout")
    if (ev.fold_train_size is not None or "evaluation.fold_train_size" in ev.grid) and ev.mode != "kfold":
        raise ConfigError(f"{cfg.source}: evaluation.fold_train_size needs evaluation.mode: kfold, got {ev.mode}")
    if needs_test and not has_test_split:
        what = "evaluation.mode: kfold" if ev.mode == "holdout" else "evaluation.outer: kfold"
        raise ConfigError(f"{cfg.source}: dataset {cfg.dataset.title} has no fixed test split; set {what}")
    pairs = _fold_pairs(cfg)
    units = []
    for g, values in enumerate(grid_points(cfg) if grid is None else grid.points):
        for f, j in pairs:
            for p in range(cfg.training.permutations):
                units.append(Unit(g, values, f, p, j))
    return units


def fold_shared(cfg: ExperimentConfig, ds: Dataset | None = None, grid: Grid | None = None) -> bool:
    """Whether a config's units are persisted and run one fold at a time across its grid points:
    cross-validation or a held-out test set, a grid of more than one point over settings of the
    algorithm alone (not its name) and the training seed; with the linear kernel, or (given the
    dataset ``ds``, integer features without preprocessing) the perceptron in dual form with a
    polynomial kernel of degree 2 or more in at most one pass (:func:`fold_lockstep`). Those units
    of a fold train on the same examples and are tested on the same points with the same kernel,
    so their evaluation computes the kernel block once, against the union of their support
    examples (:func:`~perceptron_lab.model.predict.evaluate_shared`), each value the same as in a
    block of its own: on Khardon & Wachman's MNIST rows, 49 grid points of a fold have about 1.2
    million support examples in all but 38 thousand distinct ones."""
    ev = cfg.evaluation
    keys = list(ev.grid)
    ok = (bool(keys) and all(k.startswith("algorithm.") or k == "training.seed" for k in keys)
          and "algorithm.name" not in keys
          and len(grid_points(cfg) if grid is None else grid.points) > 1 and ev.fold_train_size is None
          and (cfg.kernel.type == "linear" or fold_lockstep(cfg))
          and algorithm(cfg.algorithm.name).family != FAMILY_BUDGET)
    if not ok or ds is None or cfg.kernel.type == "linear":
        return ok
    return cfg.dataset.preprocess == "none" and all(
        exact32_ok(np.asarray(X, dtype=np.float64)) for X in (ds.X_train, ds.X_test) if X is not None)


#: Settings of the perceptron that may differ between runs trained in lockstep.
LOCKSTEP_KEYS = ("algorithm.eta", "algorithm.theta_init", "algorithm.C", "algorithm.tau", "algorithm.lambda",
                 "algorithm.alpha_bound")


def fold_lockstep(cfg: ExperimentConfig) -> bool:
    """Whether a fold's grid points train together (:func:`~perceptron_lab.engine.perceptron.train_lockstep`):
    the perceptron in dual form (a polynomial kernel of degree 2 or more) in float64 for at most
    one pass, its grid over the perceptron's numeric settings only (:data:`LOCKSTEP_KEYS`). On
    integer features their single passes over the same order then compute each support vector's
    kernel values once for all of them, with the same logs as alone."""
    return (algorithm(cfg.algorithm.name).family == FAMILY_PERCEPTRON and cfg.kernel.type == "poly" and (cfg.kernel.degree or 1) >= 2
            and cfg.algorithm.form in ("auto", "dual") and cfg.training.dtype == "float64"
            and cfg.training.epochs <= 1 and bool(cfg.evaluation.grid)
            and all(k in LOCKSTEP_KEYS for k in cfg.evaluation.grid))


def plan_parts(cfg: ExperimentConfig, units, ds: Dataset | None = None, grid: Grid | None = None) -> list[Part]:
    """Group units into parts: one per grid point when the config has a grid, one per fold (inner
    fold included) when :func:`fold_shared` (on the dataset ``ds``, when given), else one per unit."""
    if not cfg.evaluation.grid:
        return [Part(u.key, u.grid_point, u.grid_values, [u]) for u in units]
    if fold_shared(cfg, ds, grid):
        folds: dict = {}
        for u in units:
            key = f"f{u.fold:+03d}" + (f"_i{u.inner_fold:02d}" if u.inner_fold >= 0 else "")
            if key not in folds:
                folds[key] = Part(key, -1, {}, [], shared=True)
            folds[key].units.append(u)
        return list(folds.values())
    n_points = max((u.grid_point for u in units), default=0) + 1
    width = max(3, len(str(n_points - 1)))
    parts: dict[int, Part] = {}
    for u in units:
        if u.grid_point not in parts:
            parts[u.grid_point] = Part(f"g{u.grid_point:0{width}d}", u.grid_point, u.grid_values, [])
        parts[u.grid_point].units.append(u)
    return list(parts.values())


def part_config(cfg: ExperimentConfig, part: Part) -> ExperimentConfig:
    return with_overrides(cfg, part.grid_values) if part.grid_values else cfg


def part_configs(cfg: ExperimentConfig, parts) -> list[ExperimentConfig]:
    """:func:`part_config` of each of ``parts``, resolved once per grid point: the parts of one
    point (its folds) get the same config object (a config of 7,280 parts has 728 points)."""
    by_point: dict = {}
    out = []
    for p in parts:
        key = json.dumps(p.grid_values, sort_keys=True, default=str)
        if key not in by_point:
            by_point[key] = part_config(cfg, p)
        out.append(by_point[key])
    return out


def unit_steps(cfg: ExperimentConfig, ds: Dataset, unit: Unit) -> int:
    """Training steps of a unit (what the progress bar counts)."""
    n = len(ds.y_train)
    ev = cfg.evaluation
    if unit.fold >= 0:
        n -= len(np.array_split(np.arange(n), ev.folds)[unit.fold])
    if unit.inner_fold >= 0:
        n -= len(np.array_split(np.arange(n), ev.inner_folds)[unit.inner_fold])
    if ev.fold_train_size is not None:
        n = min(n, ev.fold_train_size)
    return int(round(cfg.training.epochs * n))


def results_hash(cfg: ExperimentConfig) -> str:
    """Hash of everything that determines the numbers in results.csv.

    The name, description and output section are left out, so configs that differ only there
    (e.g. Freund & Schapire's Table 2 config, which reuses the Table 1 d = 4 runs) share a folder.
    """
    text = json.dumps(numbers_settings(cfg), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def numbers_settings(cfg: ExperimentConfig) -> dict:
    """The resolved config without what cannot change a number (name, description, the paper it is
    scored against, extends and the output section)."""
    d = cfg.to_dict()
    for k in ("name", "description", "paper", "output", "extends"):
        d.pop(k, None)
    return d


def part_keys(cfg: ExperimentConfig, parts, fingerprint: str, data_dir=None, points=None) -> dict:
    """The key each part must carry (:func:`perceptron_lab.run.store.part_key`): the part's resolved
    config with the output format, its units, the fingerprint of the data it reads and of the
    package's code. ``fingerprint`` is the config's data's (:func:`perceptron_lab.run.store.data_fingerprint`);
    parts whose grid values change the data are fingerprinted on their own data."""
    prints: dict = {}
    keys = {}
    code = code_fingerprint()
    settings: dict = {}   # per grid point's config (part_configs shares one among its parts)
    pcfgs = [cfg if p.shared else points[p.grid_point] for p in parts] if points else part_configs(cfg, parts)
    for p, pcfg in zip(parts, pcfgs):
        if id(pcfg) not in settings:
            settings[id(pcfg)] = {**numbers_settings(pcfg), "output": {"float_format": pcfg.output.float_format}}
        d = settings[id(pcfg)]
        fp = fingerprint
        if any(k.startswith("dataset.") for k in p.grid_values):
            dkey = json.dumps(d["dataset"], sort_keys=True, default=str)
            if dkey not in prints:
                from perceptron_lab.run.inputs import load_data

                prints[dkey] = data_fingerprint(load_data(pcfg, data_dir))
            fp = prints[dkey]
        keys[p.key] = part_key(d, [u.key for u in p.units], fp, code)
    return keys


@dataclass(frozen=True)
class Plan:
    """A run, resolved from its config once (:func:`make_plan`); nothing downstream re-reads the
    config to find what to run. Frozen; its dicts are read, never changed.

    Attributes
    ----------
    config : ExperimentConfig
        The resolved config the plan was made from (immutable). Writers of a paper's layout read
        its descriptive settings; what to run comes from the fields below.
    name, source : str
        The config's name and where it was read from (messages name it).
    settings : dict
        The resolved config as run.json records it (``config``).
    results_hash : str
        Hash of :func:`numbers_settings`: a folder holding another hash holds another run's results.
    seed : int
        ``training.seed``, from which every unit's seed is drawn (:func:`~perceptron_lab.engine.seeds.unit_seed`).
    units, parts : tuple
        Every :class:`Unit` in plan order, and the :class:`Part` s that persist them.
    keys : dict of str to str
        The key each part (by ``Part.key``) must carry to be reused (:func:`part_keys`).
    fingerprint : str
        The fingerprint of the data read (:func:`~perceptron_lab.run.store.data_fingerprint`).
    points : dict of int to ExperimentConfig
        The resolved config of each grid point (the config itself without a grid): what the papers'
        layouts describe and what a part's data is loaded from (:meth:`data`).
    specs : dict of int to UnitSpec
        The :class:`~perceptron_lab.run.spec.UnitSpec` of each grid point: what its units train,
        evaluate and write.
    steps : dict of str to int
        Training steps of each unit (by ``Unit.key``): what the progress bar counts.
    columns : tuple of str
        The columns of results.csv (nested cross-validation adds two).
    lockstep : bool
        The units of a fold's part train together (:func:`fold_lockstep`).
    grid : Grid or None
        The grid and its searches (None without ``evaluation.grid``).
    size : dict
        The run's size estimate, checked against the limits (:func:`~perceptron_lab.model.bounds.check_run_size`).
    exactness : dict
        Whether its numbers are the same on every machine (:func:`~perceptron_lab.model.exactness.exactness`).
    """

    config: ExperimentConfig
    name: str
    source: str
    settings: dict
    results_hash: str
    seed: int
    units: tuple
    parts: tuple
    keys: dict
    fingerprint: str
    points: dict
    specs: dict
    steps: dict
    columns: tuple
    lockstep: bool
    grid: Grid | None
    size: dict
    exactness: dict

    def point(self, part_or_unit) -> ExperimentConfig:
        """The resolved config a unit (or a part's units; a shared part's first point) runs."""
        return self.points[self._grid_point(part_or_unit)]

    def spec(self, part_or_unit) -> UnitSpec:
        """The :class:`~perceptron_lab.run.spec.UnitSpec` a unit (or a part's units; a shared
        part's first point) runs."""
        return self.specs[self._grid_point(part_or_unit)]

    def data(self, part_or_unit, data_dir=None) -> Dataset:
        """The dataset a unit (or a part) reads, loaded (:func:`~perceptron_lab.run.inputs.load_data`)."""
        from perceptron_lab.run.inputs import load_data

        return load_data(self.point(part_or_unit), data_dir)

    @staticmethod
    def _grid_point(part_or_unit) -> int:
        g = part_or_unit.grid_point
        return part_or_unit.units[0].grid_point if g < 0 else g

    @property
    def nested(self) -> bool:
        return self.config.evaluation.mode == "nested"


def make_plan(cfg: ExperimentConfig, ds: Dataset, data_dir=None, allow_large: bool = False) -> Plan:
    """The plan of ``cfg`` on its dataset ``ds`` (as read for the run): the limits checked
    (ConfigError, exit status 2, for a run beyond them unless ``allow_large``), the units and
    parts planned, each part's key computed, each grid point's config resolved."""
    size = check_run_size(cfg, len(ds.y_train), allow_large)   # before a grid of any size is built
    grid = Grid.from_config(cfg)
    units = plan_units(cfg, ds.X_test is not None, grid)
    parts = plan_parts(cfg, units, ds, grid)
    fingerprint = data_fingerprint(ds)
    points, values = {}, {}
    for u in units:
        if u.grid_point not in points:
            points[u.grid_point] = with_overrides(cfg, u.grid_values) if u.grid_values else cfg
            values[u.grid_point] = u.grid_values
    keys = part_keys(cfg, parts, fingerprint, data_dir, points)
    data = {}   # a grid over the dataset's settings reads other data at some points
    for g, pcfg in points.items():
        if any(k.startswith("dataset.") for k in values[g]):
            from perceptron_lab.run.inputs import load_data

            data[g] = load_data(pcfg, data_dir)
    steps = {u.key: unit_steps(points[u.grid_point], data.get(u.grid_point, ds), u) for u in units}
    return Plan(config=cfg, name=cfg.name, source=str(cfg.source), settings=cfg.to_dict(),
                results_hash=results_hash(cfg), seed=cfg.training.seed, units=tuple(units), parts=tuple(parts),
                keys=keys, fingerprint=fingerprint,
                points=points, specs={g: unit_spec(c) for g, c in points.items()}, steps=steps,
                columns=tuple(result_columns(cfg)), lockstep=fold_lockstep(cfg), grid=grid if cfg.evaluation.grid else None, size=size,
                exactness=exactness(cfg, ds.X_train, ds.X_test))

