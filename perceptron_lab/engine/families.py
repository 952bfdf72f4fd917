"""The algorithms plab trains, in one table (:data:`ALGORITHMS`), and the one call that trains any
of them (:func:`train_algorithm`).

Each algorithm name maps to one :class:`Algorithm` row:

* its engine **family**: the perceptron (:mod:`~perceptron_lab.engine.perceptron`; Freund &
  Schapire 1999, Figure 1, with Khardon & Wachman 2007's variants as settings), ALMA
  (:mod:`~perceptron_lab.engine.alma`; Gentile 2001, Figure 1) or the budgeted kernel perceptrons
  (:mod:`~perceptron_lab.engine.budget`: the Stoptron, the RBP, the Forgetron, the Projectron(++)
  and NORMA);
* its **settings record**: the algorithm's settings as the user wrote them (symbolic values such
  as ``theta_init: avg_sq_norm`` or ALMA's ``B: sqrt8/alpha`` kept), frozen and typed; the engine
  turns them into absolute parameters on the training data (:meth:`PerceptronSettings.params`,
  :meth:`AlmaSettings.params`, :meth:`BudgetSettings.params`);
* how its **kernel is prepared**: checked for the range of the float type (``range_safe``), or
  besides scaled to ``max_i K(x_i, x_i) = 1`` on the training rows (``unit_diag``, the budgeted
  algorithms, whose thresholds are in those units);
* its **prediction path**: every rule of :mod:`perceptron_lab.model.predict` from the mistake log
  (``rules``), or the budgeted log's last / avg / vote (``budget``).

No other module branches on an algorithm's name to find these. Nothing here reads a config: the
plan (:mod:`perceptron_lab.run.plan`) builds the settings records from a config once, and the
estimators build the same records from their hyperparameters.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import ClassVar, Union

import numpy as np

from perceptron_lab.constants import (BUDGET_ALGORITHMS, DEFAULT_ALMA_ALPHA, DEFAULT_ALMA_C, DEFAULT_ALMA_P,
                                      DEFAULT_ETA, DEFAULT_NORMA_ETA, DEFAULT_NORMA_RHO, DEFAULT_PROJECTRON_ETA,
                                      LAMBDA_TERMS)
from perceptron_lab.engine.alma import AlmaParams, resolve_B, train_alma
from perceptron_lab.engine.base import EngineError
from perceptron_lab.engine.budget import BudgetParams, train_budget
from perceptron_lab.engine.kernels import Kernel, kernel_diag
from perceptron_lab.engine.linear import sparse_refusal
from perceptron_lab.engine.perceptron import PerceptronParams, resolve_params, train
from perceptron_lab.sparse import issparse

FAMILY_PERCEPTRON, FAMILY_ALMA, FAMILY_BUDGET = "perceptron", "alma", "budget"
#: How a family's kernel is prepared on the training rows (see the module docstring).
KERNEL_RANGE_SAFE, KERNEL_UNIT_DIAG = "range_safe", "unit_diag"
#: A family's prediction path (see the module docstring).
PREDICT_RULES, PREDICT_BUDGET = "rules", "budget"


@dataclass(frozen=True)
class PerceptronSettings:
    """The perceptron's settings as written (Khardon & Wachman 2007, Figure 2: eta, theta_init, C,
    tau, the lambda-trick, the alpha-bound; Freund & Schapire 1999 with the defaults).
    ``theta_init`` may be ``'avg_sq_norm'`` and ``C`` ``'theta_init'``; ``alpha_bound`` None is
    unbounded."""

    eta: float = DEFAULT_ETA
    theta_init: float | str = 0.0
    C: float | str = 0.0
    tau: float = 0.0
    lambda_: float = 0.0
    alpha_bound: int | None = None
    lambda_term: str = LAMBDA_TERMS[0]
    form: str = "auto"

    name: ClassVar[str] = "perceptron"

    def params(self, kdiag_train: np.ndarray, value_factor=1.0) -> PerceptronParams:
        """The absolute engine parameters on training rows with K(x, x) = ``kdiag_train``
        (:func:`~perceptron_lab.engine.perceptron.resolve_params`)."""
        return resolve_params(self, kdiag_train, value_factor)

    def describe(self) -> str:
        """The ``params`` column of a run's results rows."""
        ab = "inf" if self.alpha_bound is None else self.alpha_bound
        return (f"eta={self.eta:g};theta_init={self.theta_init};C={self.C};tau={self.tau:g};"
                f"lambda={self.lambda_:g};alpha_bound={ab}")


@dataclass(frozen=True)
class AlmaSettings:
    """ALMA_p(alpha; B, C) as written (Gentile 2001, Figure 1): ``B`` None or ``'1/alpha'`` is
    Gentile's 1 / alpha (§4), ``'sqrt8/alpha'`` Theorem 3's sqrt(8) / alpha."""

    alpha: float = DEFAULT_ALMA_ALPHA
    B: float | str | None = None
    C: float = DEFAULT_ALMA_C
    p: float = DEFAULT_ALMA_P

    name: ClassVar[str] = "alma"
    form: ClassVar[str] = "auto"

    def params(self) -> AlmaParams:
        """The engine's :class:`~perceptron_lab.engine.alma.AlmaParams`, B resolved to a number."""
        alpha = float(self.alpha)
        return AlmaParams(alpha=alpha, B=resolve_B(self.B, alpha), C=float(self.C), p=float(self.p))

    def describe(self) -> str:
        return f"alpha={self.alpha:g};B={self.B};C={self.C:g};p={self.p:g}"


def default_eta(algorithm: str) -> float:
    """The default ``eta`` of a budgeted algorithm (used by the Projectron(++) and NORMA only)."""
    return DEFAULT_NORMA_ETA if algorithm == "norma" else DEFAULT_PROJECTRON_ETA


@dataclass(frozen=True)
class BudgetSettings:
    """A budgeted algorithm's settings as written: ``budget`` None is no limit; ``eta`` the
    Projectron's threshold or NORMA's learning rate (None: the algorithm's default); ``lambda_``,
    ``rho`` and ``schedule`` are NORMA's."""

    name: str
    budget: int | None = None
    eta: float | None = None
    lambda_: float | None = 0.0
    rho: float | None = DEFAULT_NORMA_RHO
    schedule: str | None = "constant"

    form: ClassVar[str] = "auto"

    def params(self, seed=0) -> BudgetParams:
        """The engine's :class:`~perceptron_lab.engine.budget.BudgetParams`; the RBP's random
        removals are drawn from ``seed``."""
        budget = np.iinfo(np.int64).max if self.budget is None else int(self.budget)
        return BudgetParams(algorithm=self.name, budget=budget,
                            eta=float(self.eta) if self.eta is not None else default_eta(self.name),
                            lam=float(self.lambda_) if self.lambda_ is not None else 0.0,
                            rho=float(self.rho) if self.rho is not None else DEFAULT_NORMA_RHO,
                            schedule=self.schedule or "constant", seed=seed)

    def describe(self) -> str:
        out = f"budget={'inf' if self.budget is None else self.budget}"
        if self.name in ("projectron", "projectron++", "norma"):
            out += f";eta={self.eta:g}"
        if self.name == "norma":
            out += f";lambda={self.lambda_:g};rho={self.rho:g};schedule={self.schedule}"
        return out


Settings = Union[PerceptronSettings, AlmaSettings, BudgetSettings]


@dataclass(frozen=True)
class Algorithm:
    """One row of :data:`ALGORITHMS` (see the module docstring)."""

    name: str
    family: str
    settings: type
    kernel: str
    predict: str

    def make_settings(self, **values) -> Settings:
        """The algorithm's settings record from ``values`` (keyword per field; the budgeted
        records take the name from the row)."""
        if self.family == FAMILY_BUDGET:
            return BudgetSettings(name=self.name, **values)
        return self.settings(**values)

    @property
    def setting_names(self) -> tuple:
        """The fields of the settings record a config or an estimator fills."""
        from dataclasses import fields

        return tuple(f.name for f in fields(self.settings) if f.name != "name")


#: Every algorithm name plab trains, with its family, settings record, kernel preparation and
#: prediction path.
ALGORITHMS: dict[str, Algorithm] = {
    "perceptron": Algorithm("perceptron", FAMILY_PERCEPTRON, PerceptronSettings, KERNEL_RANGE_SAFE, PREDICT_RULES),
    "alma": Algorithm("alma", FAMILY_ALMA, AlmaSettings, KERNEL_RANGE_SAFE, PREDICT_RULES),
    **{n: Algorithm(n, FAMILY_BUDGET, BudgetSettings, KERNEL_UNIT_DIAG, PREDICT_BUDGET) for n in BUDGET_ALGORITHMS},
}


def algorithm(name: str) -> Algorithm:
    """The :data:`ALGORITHMS` row of ``name``; an unknown name is an :class:`EngineError` that
    names the closest one."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), list(ALGORITHMS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise EngineError(f"unknown algorithm {name!r}: expected one of {', '.join(ALGORITHMS)}{hint}") from None


def algorithm_of(settings: Settings) -> Algorithm:
    """The :data:`ALGORITHMS` row a settings record belongs to."""
    return algorithm(settings.name)


def never_updates(settings: Settings, max_kdiag: float, prefix: str = "algorithm.") -> str | None:
    """Why a run of ``settings`` can make no update at all on training rows whose largest
    ``K(x, x)`` (the kernel as the run computes it) is ``max_kdiag``; None when it can update.
    ``prefix`` names the settings as the caller's user writes them (``algorithm.`` in a config,
    empty for a Python parameter).

    * The Projectron(++) (Orabona, Keshet & Caputo 2009, Figures 1 and 2) adds a mistake to the
      support set only when its distance ``delta`` from the span of the set exceeds ``eta``. While
      the set is empty that distance is ``sqrt(K(x, x))`` and the "projected" update is 0, so with
      ``eta >= sqrt(max K(x, x))`` the set stays empty for ever: no update, one class predicted.
      (DOGMA, Orabona's own code, ``k_projectron_train.m``, behaves the same with its ``eta`` on the
      squared distance.) A margin update of Projectron++ needs a support set too.
    * NORMA (Kivinen, Smola & Williamson 2004) updates when ``y f(x) < rho``; f starts at 0, so
      with ``rho = 0`` no example ever passes and f stays 0.
    """
    name = getattr(settings, "name", "")
    if name in ("projectron", "projectron++"):
        eta = settings.params().eta
        top = math.sqrt(max_kdiag) if max_kdiag > 0 else 0.0
        if eta >= top:
            return (f"{prefix}eta = {eta:g} is at least sqrt(max K(x, x)) = {top:.4g}, the largest distance an "
                    f"example can have from the span of the support set: with the set empty no mistake is ever "
                    f"added (its projection onto the empty span is 0), so the {name} never updates and predicts "
                    f"one class. Set {prefix}eta below {top:.4g} (it bounds the distance itself, not its square)")
    if name == "norma":
        rho = settings.params().rho
        if rho <= 0.0:
            return (f"{prefix}rho = {rho:g}: NORMA updates when y f(x) < rho, and f starts at 0, so no example ever "
                    f"passes and f stays 0. Set {prefix}rho above 0 (its default is {DEFAULT_NORMA_RHO:g})")
    return None


def perceptron_params(settings, Xtr, kernel: Kernel) -> list[PerceptronParams]:
    """The engine parameters of the perceptron ``settings`` (a list of :class:`PerceptronSettings`)
    trained on ``Xtr``, with K(x, x) computed once for all."""
    kd = kernel_diag(kernel, Xtr)
    return [s.params(kd, kernel.to_values) for s in settings]


def train_algorithm(settings: Settings, X, Y, kernel: Kernel, order, epochs: float, checkpoints, *,
                    dtype=np.float64, chunk_size: int = 512, cache_limit_gb: float = 8.0, progress=None,
                    seed=0, record_changes: bool = False, source: str = ""):
    """Train the algorithm of ``settings`` on ``(X, Y)`` (:func:`~perceptron_lab.engine.perceptron.label_matrix`)
    in ``order`` for ``epochs`` passes, with checkpoints at the epochs ``checkpoints``.

    Returns the family's log: a :class:`~perceptron_lab.engine.perceptron.TrainLog`, or for the
    budgeted algorithms a :class:`~perceptron_lab.engine.budget.BudgetLog` (its vote changes
    recorded with ``record_changes``; the RBP's removals drawn from ``seed``). ``source`` prefixes
    a refusal (the config or estimator it came from). This is the one call that trains a unit of
    ``plab run``, an estimator's ``fit`` and the papers' retraining."""
    alg = algorithm_of(settings)
    if issparse(X):
        refusal = sparse_refusal(alg.name, kernel, getattr(settings, "p", None) or 2.0, settings.form or "auto")
        if refusal:
            raise EngineError(f"{source}: {refusal}" if source else refusal)
    if alg.family == FAMILY_PERCEPTRON:
        params = perceptron_params([settings], X, kernel)[0]
        return train(X, Y, kernel, params, order, epochs, checkpoints, chunk_size=chunk_size, dtype=dtype,
                     form=settings.form, cache_limit_gb=cache_limit_gb, progress=progress)
    if alg.family == FAMILY_ALMA:
        # ALMA normalizes instances (in the kernel's feature space), so a constant factor of the
        # kernel (range_safe) does not matter
        return train_alma(X, Y, kernel, settings.params(), order, epochs, checkpoints, chunk_size=chunk_size,
                          dtype=dtype, cache_limit_gb=cache_limit_gb, progress=progress)
    # kernel values in float64 whatever dtype (perceptron_lab.engine.budget)
    return train_budget(X, Y, kernel, settings.params(seed), order, epochs, checkpoints, chunk_size=chunk_size,
                        progress=progress, memory_limit_gb=cache_limit_gb, record_changes=record_changes)


__all__ = ["ALGORITHMS", "Algorithm", "AlmaSettings", "BudgetSettings", "FAMILY_ALMA", "FAMILY_BUDGET",
           "FAMILY_PERCEPTRON", "KERNEL_RANGE_SAFE", "KERNEL_UNIT_DIAG", "PREDICT_BUDGET", "PREDICT_RULES",
           "PerceptronSettings", "Settings", "algorithm", "algorithm_of", "default_eta", "never_updates",
           "perceptron_params",
           "train_algorithm"]
