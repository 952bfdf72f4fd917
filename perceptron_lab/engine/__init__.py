"""Training engines. :mod:`perceptron_lab.engine.families` maps each algorithm name to its engine
family, settings record, kernel preparation and prediction path (:data:`ALGORITHMS`), and
:func:`train_algorithm` trains any of them from its settings record. Nothing in this package reads a
config.

Every engine returns a :class:`~perceptron_lab.engine.perceptron.TrainLog` (the budgeted ones a
:class:`~perceptron_lab.engine.budget.BudgetLog`), from which :mod:`perceptron_lab.model.predict`
computes every prediction rule at every checkpoint.
"""

from __future__ import annotations

# first: numba's cache folder is keyed by this code before any engine function is decorated
from perceptron_lab.engine import numba_cache as numba_cache  # noqa: I001
from perceptron_lab.engine.alma import AlmaParams, train_alma
from perceptron_lab.engine.budget import BudgetLog, BudgetParams, train_budget
from perceptron_lab.engine.families import (ALGORITHMS, Algorithm, AlmaSettings, BudgetSettings, PerceptronSettings,
                                            algorithm, perceptron_params, train_algorithm)
from perceptron_lab.engine.perceptron import PerceptronParams, TrainLog, label_matrix, resolve_params, train
from perceptron_lab.engine.seeds import training_order, unit_seed

__all__ = ["ALGORITHMS", "Algorithm", "AlmaParams", "AlmaSettings", "BudgetLog", "BudgetParams", "BudgetSettings",
           "PerceptronParams", "PerceptronSettings", "TrainLog", "algorithm", "label_matrix", "perceptron_params",
           "resolve_params", "train", "train_algorithm", "train_alma", "train_budget", "training_order", "unit_seed"]
