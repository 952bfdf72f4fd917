"""Training engines. :func:`train_from_config` resolves a config's algorithm to an engine call.

Every engine returns a :class:`~perceptron_lab.engine.perceptron.TrainLog`, from which
:mod:`perceptron_lab.model.predict` computes every prediction rule at every checkpoint.
"""

from __future__ import annotations

from perceptron_lab.errors import PlabError
from perceptron_lab.engine.kernels import kernel_diag
from perceptron_lab.constants import BUDGET_ALGORITHMS
from perceptron_lab.engine.alma import AlmaParams, params_from_config, train_alma
from perceptron_lab.engine.base import EngineError
from perceptron_lab.engine.budget import BudgetLog, BudgetParams, train_budget
from perceptron_lab.engine.budget import params_from_config as budget_params
from perceptron_lab.engine.linear import sparse_refusal
from perceptron_lab.engine.perceptron import PerceptronParams, TrainLog, label_matrix, resolve_params, train
from perceptron_lab.sparse import issparse


def perceptron_params(acfgs, Xtr, kernel) -> list[PerceptronParams]:
    """The engine parameters of the perceptron algorithm sections ``acfgs`` trained on ``Xtr``
    (:func:`~perceptron_lab.engine.perceptron.resolve_params`), with K(x, x) computed once for all."""
    kd = kernel_diag(kernel, Xtr)
    return [resolve_params(a, kd, kernel.to_values) for a in acfgs]


def train_from_config(ucfg, Xtr, Y, kernel, order, epochs_all, dtype, progress=None, seed=0) -> TrainLog | BudgetLog:
    """Train the config's algorithm on (Xtr, Y) in the given order; checkpoints at ``epochs_all``.
    The budgeted algorithms return a :class:`~perceptron_lab.engine.budget.BudgetLog`."""
    alg = ucfg.algorithm
    if issparse(Xtr):
        # sparse features reach the loops that read CSR rows; the others would need dense rows
        refusal = sparse_refusal(alg.name, kernel, getattr(alg, "p", None) or 2.0, getattr(alg, "form", "auto") or "auto")
        if refusal:
            raise EngineError(f"{ucfg.source}: {refusal}")
    if alg.name == "perceptron":
        params = perceptron_params([alg], Xtr, kernel)[0]
        return train(Xtr, Y, kernel, params, order, ucfg.training.epochs, epochs_all,
                     chunk_size=ucfg.training.chunk_size, dtype=dtype, form=alg.form,
                     cache_limit_gb=ucfg.training.cache_limit_gb, progress=progress)
    if alg.name == "alma":
        # Gentile (2001) Figure 1; params_from_config turns B (null: 1/alpha, 'sqrt8/alpha':
        # sqrt(8)/alpha) into a number before the jitted loop. ALMA normalizes instances (in the
        # kernel's feature space), so a constant factor of the kernel (range_safe) does not matter.
        return train_alma(Xtr, Y, kernel, params_from_config(alg), order, ucfg.training.epochs, epochs_all,
                          chunk_size=ucfg.training.chunk_size, dtype=dtype,
                          cache_limit_gb=ucfg.training.cache_limit_gb, progress=progress)
    if alg.name in BUDGET_ALGORITHMS:
        # perceptron_lab.engine.budget: kernel values in float64 whatever training.dtype; the RBP's
        # random removals are drawn from ``seed`` (the unit's seed when run from a config)
        return train_budget(Xtr, Y, kernel, budget_params(alg, seed), order, ucfg.training.epochs, epochs_all,
                            chunk_size=ucfg.training.chunk_size, progress=progress,
                            memory_limit_gb=ucfg.training.cache_limit_gb,
                            record_changes="vote" in ucfg.prediction.rules)
    raise PlabError(f"{ucfg.source}: algorithm '{alg.name}' is not available yet")


__all__ = ["AlmaParams", "BudgetLog", "BudgetParams", "PerceptronParams", "TrainLog", "label_matrix",
           "perceptron_params", "train", "train_alma", "train_budget", "train_from_config"]
