"""perceptron_lab: reproduce the perceptron-family papers from YAML configs.

Freund & Schapire (1999) voted perceptron, Khardon & Wachman (2007) noise-tolerant
variants, Gentile (2001) ALMA_p, and the Graepel-Herbrich-Williamson (2000) sparsity bound.
"""

from perceptron_lab.constants import __version__

#: scikit-learn estimators, imported on first use so that ``import perceptron_lab`` stays cheap.
_ESTIMATORS = ("VotedPerceptron", "MarginPerceptron", "ALMA")
_BUDGET_ESTIMATORS = ("BudgetPerceptron",)
__all__ = ["__version__", *_ESTIMATORS, *_BUDGET_ESTIMATORS]


def __getattr__(name):
    if name in _ESTIMATORS:
        from perceptron_lab.estimators import perceptron as estimators

        return getattr(estimators, name)
    if name in _BUDGET_ESTIMATORS:
        from perceptron_lab.estimators import budget as budget_estimators

        return getattr(budget_estimators, name)
    raise AttributeError(f"module 'perceptron_lab' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ESTIMATORS) | set(_BUDGET_ESTIMATORS))
