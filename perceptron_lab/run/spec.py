"""A grid point of a config, resolved once into a frozen, typed :class:`UnitSpec`.

:func:`unit_spec` is, with :func:`~perceptron_lab.run.plan.make_plan` that calls it, the last code
that reads a config: the units (:mod:`perceptron_lab.run.units`), the executors' warm-up, the
papers' retraining and the studies run from specs. A spec holds the algorithm's row of
:data:`~perceptron_lab.engine.families.ALGORITHMS` and its settings record (the same record the
estimators build from their hyperparameters), the kernel, the float type, the checkpoints, the
prediction rules, the preprocessing and the cross-validation protocol, all as plain values.
"""

from __future__ import annotations

from dataclasses import dataclass

from perceptron_lab.config.load import ExperimentConfig
from perceptron_lab.constants import EPOCH_TOL
from perceptron_lab.engine.families import Algorithm, Settings, algorithm
from perceptron_lab.engine.kernels import Kernel


@dataclass(frozen=True)
class UnitSpec:
    """Everything a unit of one grid point trains, evaluates and writes.

    Attributes
    ----------
    source : str
        Where the config was read from (messages name it).
    algorithm : Algorithm
        The algorithm's row of :data:`~perceptron_lab.engine.families.ALGORITHMS`.
    settings : PerceptronSettings, AlmaSettings or BudgetSettings
        The algorithm's settings as written.
    kernel : Kernel
        The kernel as configured (each unit checks it against its own training rows).
    fit_intercept : bool
        ``kernel.fit_intercept``: the constant 1 added to the kernel
        (:mod:`perceptron_lab.engine.intercept`; each unit applies it to its rows).
    dtype : str
        ``float32`` or ``float64``.
    epochs, checkpoints, main : float, tuple, frozenset
        Training passes; every evaluation epoch, sorted; the main checkpoints among them
        (``training.checkpoints`` and ``epochs``; the others are curve points).
    chunk_size, cache_limit_gb : int, float
        The engine's block size and memory allowance for cached kernel values.
    seed : int
        ``training.seed``: every unit's order is drawn from it (:func:`~perceptron_lab.engine.seeds.training_order`).
    rules, vote_weight : tuple, str
        The prediction rules evaluated and the voted rule's weights.
    preprocess : str
        ``dataset.preprocess``.
    mode, folds, inner_folds, fold_seed, fold_train_size, stratify
        The evaluation protocol: holdout, kfold or nested, and its folds (stratified by class, or
        a shuffled split).
    float_format : str
        How results rows write floats.
    """

    source: str
    algorithm: Algorithm
    settings: Settings
    kernel: Kernel
    dtype: str
    epochs: float
    checkpoints: tuple
    main: frozenset
    chunk_size: int
    cache_limit_gb: float
    seed: int
    rules: tuple
    vote_weight: str
    preprocess: str
    mode: str
    folds: int
    inner_folds: int
    fold_seed: int
    fold_train_size: int | None
    float_format: str
    fit_intercept: bool = False
    stratify: bool = False

    @property
    def name(self) -> str:
        """The algorithm's name."""
        return self.algorithm.name

    @property
    def nested(self) -> bool:
        return self.mode == "nested"

    @property
    def params_text(self) -> str:
        """The ``params`` column of the results rows (``;fit_intercept=true`` appended only when
        set, so that the rows of runs without an intercept read as before the key existed)."""
        return self.settings.describe() + (";fit_intercept=true" if self.fit_intercept else "")


def kernel_of(kcfg) -> Kernel:
    """The :class:`~perceptron_lab.engine.kernels.Kernel` of a config's ``kernel`` section."""
    return Kernel.named(kcfg.type, kcfg.degree, kcfg.scale, getattr(kcfg, "sigma", None))


def algorithm_settings(acfg) -> Settings:
    """The settings record of a config's ``algorithm`` section: the fields of its algorithm's
    record (:data:`~perceptron_lab.engine.families.ALGORITHMS`), each read from the key of the
    same name."""
    alg = algorithm(acfg.name)
    return alg.make_settings(**{f: getattr(acfg, f) for f in alg.setting_names})


def eval_epochs(cfg: ExperimentConfig):
    """(all evaluation epochs sorted, the set of main checkpoints) of a config."""
    main = sorted(set(float(c) for c in cfg.training.checkpoints) | {float(cfg.training.epochs)})
    pts = set(main)
    if cfg.training.curve_every:
        k = 1
        while k * cfg.training.curve_every <= cfg.training.epochs + EPOCH_TOL:
            pts.add(round(k * cfg.training.curve_every, 6))
            k += 1
    return sorted(pts), set(main)


def unit_spec(cfg: ExperimentConfig) -> UnitSpec:
    """The :class:`UnitSpec` of a resolved config (one grid point's)."""
    epochs_all, main = eval_epochs(cfg)
    tr, ev = cfg.training, cfg.evaluation
    return UnitSpec(source=str(cfg.source), algorithm=algorithm(cfg.algorithm.name),
                    settings=algorithm_settings(cfg.algorithm), kernel=kernel_of(cfg.kernel), dtype=tr.dtype,
                    epochs=tr.epochs, checkpoints=tuple(epochs_all), main=frozenset(main), chunk_size=tr.chunk_size,
                    cache_limit_gb=tr.cache_limit_gb, seed=tr.seed, rules=tuple(cfg.prediction.rules),
                    vote_weight=cfg.prediction.vote_weight, preprocess=cfg.dataset.preprocess, mode=ev.mode,
                    folds=ev.folds, inner_folds=ev.inner_folds, fold_seed=ev.fold_seed,
                    fold_train_size=ev.fold_train_size, float_format=cfg.output.float_format,
                    fit_intercept=bool(cfg.kernel.fit_intercept), stratify=bool(ev.stratify))


__all__ = ["UnitSpec", "algorithm_settings", "eval_epochs", "kernel_of", "unit_spec"]
