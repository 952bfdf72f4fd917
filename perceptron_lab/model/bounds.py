"""The size of a run, estimated from its config and its data before any work starts.

A typo such as ``epochs: 1e9`` or ``permutations: 1e12``, or a grid of six keys with fifty values
each, would otherwise exhaust the machine (memory for the plan, days of training) before any
error. :func:`check_run_size` counts the units without building them, estimates the training
steps, checkpoints and plan memory, and refuses an absurd run with one line that gives the
estimate (exit status 2) unless the user insists (``plab run --allow-large``). Insisting lifts
those limits, not what no machine can run (:func:`impossible`): a plan and result rows beyond
this machine's memory, or more than :data:`MAX_HOURS_ANYWAY` hours of training, stop the run
with one line all the same instead of a hang or a MemoryError.
"""

from __future__ import annotations

import math

from perceptron_lab.errors import ConfigError

#: Above these a run is refused unless the user insists.
MAX_UNITS = 2_000_000
MAX_TRAIN_STEPS = 2e11          # example visits over all units
MAX_CHECKPOINTS_PER_UNIT = 100_000
#: Example visits per second used for the time estimate (a linear perceptron on one core; kernels
#: are slower), and bytes the plan and the results take per unit.
STEPS_PER_SECOND = 2e7
BYTES_PER_UNIT = 4_000
#: Bytes of the result rows of one checkpoint of one unit, at the least (a dozen rows of a dozen
#: fields: rules x labels, mistakes, support vectors).
BYTES_PER_CHECKPOINT = 1_000
#: Beyond this, no run starts, ``--allow-large`` or not: a century of one core's training (at
#: :data:`STEPS_PER_SECOND`, the fastest case; a thousand-core cluster would still take six weeks).
MAX_HOURS_ANYWAY = 1e6


def grid_size(cfg) -> int:
    """Grid points of a config, counted without building them: the product of the value lists, or
    with search plans at most (settings) x (1 + the sum over plans of their value products)."""
    grid = dict(cfg.evaluation.grid)
    if not grid:
        return 1
    plans = cfg.evaluation.search
    if not plans:
        return math.prod(len(v) for v in grid.values())
    planned = set()
    total = 1
    for plan in plans:
        keys = [k for stage in plan for k in (stage if isinstance(stage, (list, tuple)) else [stage])]
        planned.update(keys)
        total += math.prod(len(grid.get(k, [None])) for k in keys)
    settings = math.prod(len(v) for k, v in grid.items() if k not in planned)
    return settings * total


def fold_pairs(cfg) -> int:
    ev = cfg.evaluation
    if ev.mode == "holdout":
        return 1
    if ev.mode == "kfold":
        return ev.folds
    return (1 if ev.outer == "holdout" else ev.folds) * (1 + ev.inner_folds)


def estimate_size(units: int, epochs: float, n_train: int, checkpoints: float = 1) -> dict:
    """Units, training steps, checkpoints per unit, plan memory and time of ``units`` runs of
    ``epochs`` passes over ``n_train`` examples, from plain numbers: the estimate behind
    :func:`check_run_size` (a config) and the estimators' ``fit`` (one run)."""
    steps = float(units) * float(epochs) * n_train
    return {"units": units, "steps": steps, "checkpoints": checkpoints, "plan_gb": units * BYTES_PER_UNIT / 2**30,
            "hours": steps / STEPS_PER_SECOND / 3600.0}


def over_limit(e: dict) -> str | None:
    """Which limit the estimate ``e`` (:func:`estimate_size`) exceeds: ``"units"``, ``"checkpoints"``
    or ``"steps"`` (checked in that order), or None."""
    if e["units"] > MAX_UNITS:
        return "units"
    if e["checkpoints"] > MAX_CHECKPOINTS_PER_UNIT:
        return "checkpoints"
    if e["steps"] > MAX_TRAIN_STEPS:
        return "steps"
    return None


def estimate(cfg, n_train: int) -> dict:
    """Units, training steps, checkpoints per unit, plan memory and time of a run."""
    units = grid_size(cfg) * fold_pairs(cfg) * cfg.training.permutations
    cps = len(cfg.training.checkpoints) + 1
    if cfg.training.curve_every:
        cps += cfg.training.epochs / cfg.training.curve_every
    return estimate_size(units, cfg.training.epochs, n_train, cps)


def check_folds(cfg, n_train: int) -> None:
    """Every cross-validation fold (outer and inner) must get at least one example to test on."""
    ev = cfg.evaluation
    outer = ev.mode == "kfold" or (ev.mode == "nested" and ev.outer == "kfold")
    if outer and ev.folds > n_train:
        raise ConfigError(f"{cfg.source}: evaluation.folds = {ev.folds} exceeds the {n_train} examples of "
                          f"{cfg.dataset.title}: some folds would test on nothing; use at most {n_train} folds")
    if ev.mode == "nested":
        part = n_train - (-(-n_train // ev.folds) if ev.outer == "kfold" else 0)
        if ev.inner_folds > part:
            raise ConfigError(f"{cfg.source}: evaluation.inner_folds = {ev.inner_folds} exceeds the {part} "
                              "examples of an outer training part: some inner folds would test on nothing; "
                              f"use at most {part}")


def smallest_training_part(cfg, n_train: int) -> int:
    """The fewest examples any unit of the run trains on: the training set, a cross-validation
    fold's training part, or an inner fold's."""
    ev = cfg.evaluation
    n = n_train
    outer = ev.mode == "kfold" or (ev.mode == "nested" and ev.outer == "kfold")
    if outer:
        n -= -(-n_train // ev.folds)
    if ev.mode == "nested":
        n -= -(-n // ev.inner_folds)
    return max(n, 1)


def _epoch_values(cfg) -> list[float]:
    """Every epoch count a unit trains to or records at: checkpoints (training.epochs among them),
    the first curve point, and the grid's values of training.epochs and training.checkpoints."""
    vals = [float(c) for c in cfg.training.checkpoints]
    if cfg.training.curve_every:
        vals.append(float(cfg.training.curve_every))
    for key in ("training.epochs", "training.checkpoints"):
        for v in cfg.evaluation.grid.get(key, ()):
            vals += [float(x) for x in (v if isinstance(v, (list, tuple)) else [v])
                     if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return vals


def check_steps(cfg, n_train: int) -> None:
    """Every epoch count (training.epochs, a checkpoint) must cover at least one training step
    (``round(epochs * n)`` with ``n`` the smallest training part) on the data actually read."""
    n = smallest_training_part(cfg, n_train)
    low = [e for e in _epoch_values(cfg) if round(e * n) < 1]
    if low:
        raise ConfigError(f"{cfg.source}: training.epochs or a checkpoint of {min(low):g} epochs covers less than "
                          f"one training step on the {n} examples of a training part of {cfg.dataset.title}; "
                          f"use at least {1.0 / n:.3g} epochs (one example)")


def physical_memory() -> int | None:
    """Bytes of this machine's memory, or None where the system does not say."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def impossible(e: dict) -> str | None:
    """What makes the run of estimate ``e`` (:func:`estimate_size`) impossible on any machine, or
    None: its plan and result rows need more than this machine's memory (building them would fail
    or swap for hours before any error), or its training more than :data:`MAX_HOURS_ANYWAY` hours.
    ``--allow-large`` lifts the limits of :func:`over_limit`, never these."""
    need = float(e["units"]) * (BYTES_PER_UNIT + float(e["checkpoints"]) * BYTES_PER_CHECKPOINT)
    mem = physical_memory()
    if mem is not None and need > mem:
        return (f"{e['units']:.3g} runs x {float(e['checkpoints']):.3g} checkpoints each, at least {need / 2**30:.3g} "
                f"GB for its plan and result rows, more than this machine's {mem / 2**30:.3g} GB of memory")
    if e["hours"] > MAX_HOURS_ANYWAY:
        return f"{e['steps']:.3g} training steps, about {e['hours']:.3g} hours of training (at most {MAX_HOURS_ANYWAY:.0e})"
    return None


def check_run_size(cfg, n_train: int, allow_large: bool = False) -> dict:
    """Refuse (ConfigError, exit status 2) a run beyond the limits above, with its estimate, and
    one whose folds or epochs do not fit its data (:func:`check_folds`, :func:`check_steps`).
    ``allow_large`` lifts the limits, but not what no machine can run (:func:`impossible`)."""
    check_folds(cfg, n_train)
    e = estimate(cfg, n_train)
    if allow_large:
        why = impossible(e)
        if why:
            raise ConfigError(f"{cfg.source}: this run would need {why}, even with --allow-large. Fix: check "
                              "training.epochs, training.curve_every, training.permutations and evaluation.grid "
                              "(a grid runs the product of its value lists)")
        check_steps(cfg, n_train)
        return e
    what = None
    limit = over_limit(e)
    if limit == "units":
        what = f"{e['units']:.3g} runs (grid points x folds x permutations; at most {MAX_UNITS:.0e})"
    elif limit == "checkpoints":
        what = (f"{e['checkpoints']:.3g} checkpoints per run (training.epochs / training.curve_every; at most "
                f"{MAX_CHECKPOINTS_PER_UNIT:.0e})")
    elif limit == "steps":
        what = (f"{e['steps']:.3g} training steps (runs x epochs x {n_train} examples; at most "
                f"{MAX_TRAIN_STEPS:.0e})")
    if what:
        raise ConfigError(f"{cfg.source}: this run would need {what}: about {e['hours']:.3g} hours of training "
                          f"and {e['plan_gb']:.3g} GB for its plan. Fix: check training.epochs, "
                          "training.permutations and evaluation.grid, or pass --allow-large to run it anyway")
    check_steps(cfg, n_train)
    return e


__all__ = ["check_folds", "check_steps", "smallest_training_part", "MAX_UNITS", "MAX_TRAIN_STEPS", "MAX_CHECKPOINTS_PER_UNIT", "grid_size", "fold_pairs", "estimate",
           "estimate_size", "over_limit", "check_run_size", "impossible", "physical_memory", "MAX_HOURS_ANYWAY"]
