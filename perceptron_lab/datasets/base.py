"""The in-memory form every dataset loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Dataset:
    """A train/test pair of feature matrices and integer labels.

    ``X_*`` are float64 arrays (n, f); ``y_*`` are int64 class indices 0..n_classes-1;
    ``classes`` holds the original label of each index (e.g. digits 0..9, or ``["b", "g"]``).
    Datasets without a fixed test split (most UCI sets) have ``X_test``/``y_test`` set to ``None``;
    their evaluation is by cross-validation.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    classes: list
    meta: dict = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])
