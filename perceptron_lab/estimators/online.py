"""Online learning the River way: ``learn_one(x, y)`` / ``predict_one(x)`` on dicts of features.

* :class:`BudgetKernelPerceptron`: the Stoptron, RBP, Forgetron, Projectron(++) and NORMA;
* :class:`KernelPerceptron`: the kernel perceptron (Freund & Schapire 1999, Figure 1: an update
  ``f <- f + y K(x, .)`` on every mistake ``y f(x) <= 0``), which is the Stoptron without a budget;
* :class:`ALMA`: ALMA_p(alpha; B, C) of Gentile (2001), Figure 1, in primal form (linear kernel,
  any p >= 2).

Each learns on the state of the engine that ``plab run`` trains with, one example at a time and
with the same driver: :class:`perceptron_lab.engine.budget.BudgetRun` (the run that
:func:`~perceptron_lab.engine.budget.train_budget` drives, and :class:`~perceptron_lab.BudgetPerceptron`'s
``fit`` and ``partial_fit``) and :class:`perceptron_lab.engine.alma.PrimalRun` (the run that
:func:`~perceptron_lab.engine.alma.train_primal` drives). A step costs O(labels x support set) kernel
values for the kernel perceptrons and O(labels x features) for ALMA. The memory is the support
sets (with ``rule="last"``: bounded by the budget), plus, with ``rule="avg"``, the features of
every example that was ever a support vector (the averaged hypothesis is not budgeted); for ALMA,
one weight vector per label.

Features: a dict's keys name the features; a feature missing from a dict is 0 (as in River's
linear models), and a feature seen for the first time is 0 in every earlier example. Values must
be numbers. Labels: with ``classes`` given, the model is exactly the one-vs-rest layout of the
scikit-learn estimators (one perceptron for two classes, scoring ``classes[1]`` positive), so
that a stream learned one example at a time gives the model of the batch estimator fit on the
same sequence in one pass, in order (with a kernel the batch estimator does not rescale, e.g. a
Gaussian one: see below); without it, each class gets a perceptron from its first example on
(every earlier example is a negative it never saw), ``predict_one`` returns the class of the
largest score, and None before any example. ``predict_proba_one`` raises a NotImplementedError that
names ``decision_one``: a perceptron's score is a margin, not a probability, and no calibration would
be honest on a stream. With ``kernel="linear"``, :class:`KernelPerceptron` runs in primal form (one
weight vector per class, :mod:`perceptron_lab.engine.online_linear`) and has ``learn_many`` and
``predict_many``, the same steps as ``learn_one`` and ``predict_one`` looped, bit for bit.

The kernel is used as given (the estimators of :mod:`perceptron_lab.estimators.budget` scale a
polynomial kernel to ``max K(x, x) = 1`` on their training set, which a stream does not know in
advance): the Forgetron, the Projectrons and NORMA state their thresholds for ``K(x, x) <= 1``,
which the Gaussian kernel satisfies; choose ``scale`` so that a polynomial kernel does too.

Numbers beyond float64. A kernel value or score that overflows (a polynomial kernel of a high
degree, or a small ``scale``, on large features) is never made a prediction or an update:
``learn_one``, ``predict_one`` and ``decision_one`` raise a ValueError that names a ``scale``
that works, and a refused ``learn_one`` changes nothing. (Rescaling the kernel as the stream goes
would keep the kernel perceptron's mistakes, but not the budgeted algorithms', whose thresholds
depend on the kernel's scale, and a later example can always exceed the factor chosen so far:
refusing is the one rule that holds for every algorithm.) With a Gaussian kernel, an example
farther than about 37 sigma from every support vector has kernel values below float64's range:
``predict_one`` returns the class of the exact scores (taken with the nearest support vector's
factor divided out), ``decision_one`` shows the float64 values (0), and a ``learn_one`` whose
update their lost signs would decide is refused. ALMA with p in the hundreds or more refuses in
the same way an example whose correction test, or class, float64 cannot decide
(:mod:`perceptron_lab.engine.alma`).

River (``pip install perceptron_lab[online]``) is needed for River's pipelines, ``clone`` and
evaluation; the classes learn and predict without it. Progressive validation on River's bundled
Phishing stream (no download), each example predicted before it is learned:

>>> from river import datasets, evaluate, metrics, preprocessing
>>> from perceptron_lab.estimators.online import BudgetKernelPerceptron
>>> model = preprocessing.StandardScaler() | BudgetKernelPerceptron(
...     "forgetron", budget=50, kernel="gaussian", sigma=3.0, classes=[False, True])
>>> evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
Accuracy: 8...%
>>> model["BudgetKernelPerceptron"].n_support_
{True: 50}
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from perceptron_lab.config.settings import Setting, check_settings, door
from perceptron_lab.constants import BUDGET_ALGORITHMS, DEFAULT_ALMA_C, DEFAULT_NORMA_RHO
from perceptron_lab.engine.alma import AlmaParams, PrimalRun, pnormalize, resolve_B, unresolved_bound
from perceptron_lab.engine.budget import BudgetParams, BudgetRun
from perceptron_lab.engine.families import BudgetSettings, default_eta, never_updates
from perceptron_lab.engine.intercept import intercept_kernel
from perceptron_lab.errors import NumericError, PlabError
from perceptron_lab.estimators.perceptron import _plab_order
from perceptron_lab.engine import ordered
from perceptron_lab.engine.kernels import Kernel, gram, kernel_diag
from perceptron_lab.engine.online_linear import LinearRun

_Classifier: type
try:
    from river import base as _river_base

    _Classifier = _river_base.Classifier
except ImportError:  # pragma: no cover - river is an optional extra
    _Classifier = object

__all__ = ["ALMA", "BudgetKernelPerceptron", "KernelPerceptron"]

_NO_LIMIT = int(np.iinfo(np.int64).max)

#: The rules an online class predicts with: the voted rule's cost grows with the stream.
_ONLINE_RULES = ("last", "avg")
#: The settings of the kernel perceptrons, from the config schema (perceptron_lab.config.settings).
_KERNEL_SETTINGS: dict[str, Any] = dict(kernel={}, degree={}, scale={}, sigma={}, fit_intercept={}, rule={"options": _ONLINE_RULES})


class _Intercept:
    """The key of the constant feature 1 of ``fit_intercept`` among a model's features (column 0):
    no dict of a stream holds it."""

    def __repr__(self) -> str:
        return "<intercept>"

    def __reduce__(self):
        # one object: a copy or an unpickled model finds the same key (copy and pickle take the name)
        return "_INTERCEPT"


_INTERCEPT = _Intercept()


_F64 = np.finfo(np.float64)
#: Gaussian kernel values below this (2^-960, about 36 sigma away) are not computed to full
#: precision against their sum (some are subnormal or 0): the signs of the scores are then taken
#: in a scaled form (:meth:`BudgetKernelPerceptron._kernel_scores`).
_GAUSS_FLOOR = 2.0 ** -960


def _check_range(row: np.ndarray) -> None:
    """Refuse an example whose squared norm leaves float64's full-precision range (the range
    :meth:`perceptron_lab.engine.kernels.Kernel.range_safe` checks for a batch): its inner products would
    underflow to 0 or overflow, and the stream cannot be rescaled ahead of its examples."""
    if not row.any():
        return
    with np.errstate(over="ignore", under="ignore"):
        sq = float(np.dot(row, row))
    _check_sq(sq)


#: The squared norms a row may have (:func:`_check_range`), as Python floats.
_SQ_LO, _SQ_HI = float(_F64.tiny / _F64.eps), float(_F64.max / 4)


def _check_sq(sq: float) -> None:
    """Refuse a nonzero row of squared norm ``sq`` outside float64's full-precision range (see
    :func:`_check_range`)."""
    if not (_SQ_LO <= sq <= _SQ_HI):
        raise ValueError(f"an example's squared norm |x|^2 = {sq:.3g} is outside float64's range "
                         f"({_F64.tiny / _F64.eps:.3g} to {_F64.max / 4:.3g}): its kernel values would underflow "
                         "or overflow. Multiply the stream's features by one constant that brings them near 1")

def _label_kind(y) -> str:
    """'bool', 'number' or 'other': labels of different kinds are never one class."""
    if isinstance(y, (bool, np.bool_)):
        return "bool"
    return "number" if isinstance(y, numbers.Number) else "other"


def _check_label(y, what: str = "y") -> None:
    """Refuse what cannot be a class: None, NaN (never equal to itself, so never found again), a
    missing value such as pandas.NA, and values that cannot be dict keys (lists, arrays)."""
    try:
        hash(y)
        missing = y is None or bool(y != y)
    except (TypeError, ValueError):
        raise ValueError(f"{what} = {y!r} is not a class label: give a str, a number or a bool") from None
    if missing:
        raise ValueError(f"{what} = {y!r} is not a class label: every example needs its class (not None or NaN)")

class _Online(_Classifier):
    """Features and labels of a stream: dict keys to columns, labels to one-vs-rest columns."""

    # each online class sets these (its parameters, River's convention) and defines the two methods
    _schema_settings: dict[str, Setting]
    classes: list | None
    fit_intercept: bool

    def _new_label(self) -> None:  # pragma: no cover - abstract
        """Add a label column for the class just appended to ``_classes``."""
        raise NotImplementedError

    def _scores(self, x: dict) -> np.ndarray:  # pragma: no cover - abstract
        """The score of each label column on ``x``."""
        raise NotImplementedError

    def _setup(self) -> None:
        """Check the settings (the table of perceptron_lab.config.settings) and the classes; then
        the empty state."""
        check_settings(self._schema_settings, self)
        if self.classes is not None:
            for i, c in enumerate(self.classes):
                _check_label(c, f"classes[{i}]")
                if any(_label_kind(d) != _label_kind(c) and d == c for d in list(self.classes)[:i]):
                    raise ValueError(f"classes {self.classes!r} mix {c!r} with a class of another type that equals "
                                     "it; use classes of one type")
        # the intercept of a linear hypothesis is the weight of a constant feature 1, column 0
        self._features: dict = {_INTERCEPT: 0} if self._intercept_feature() else {}
        self._classes: list = [] if self.classes is None else list(self.classes)
        if self.classes is not None and len(set(self._classes)) != len(self._classes):
            raise ValueError(f"classes {self.classes!r} repeat a class")
        self._started = False

    @property
    def _multiclass(self) -> bool:
        return True

    def __getstate__(self):
        # the last row built (kept for the learn_one that follows a predict_one on the same x) and
        # the label rows are caches: a pickle, or a comparison of states, holds the model only
        state = dict(self.__dict__)
        state.pop("_last_row", None)
        state.pop("_ylab_cache", None)
        return state

    def _intercept_feature(self) -> bool:
        """Whether ``fit_intercept`` is a constant feature 1 (a linear hypothesis; a Gaussian kernel
        takes its constant in the kernel, K + 1, and the poly kernels hold one of their own)."""
        return bool(self.fit_intercept) and getattr(self, "kernel", "linear") == "linear"

    def _row(self, x: dict) -> np.ndarray:
        """x as a row over the known features, then its new ones in the order of x (the columns
        :meth:`_add_features` gives them); ValueError, with nothing changed, for an x that is not a
        mapping of finite numbers in float64's range. One pass over x in Python (a stream's rows
        are short, and numpy's per-call costs would dominate): the squared norm that
        :func:`_check_range` bounds is the features' (without the intercept's 1), summed in x's
        order."""
        if type(x) is not dict and not isinstance(x, Mapping):
            raise ValueError(f"x must be a dict of features, got {type(x).__name__}")
        feats = self._features
        # a stream asks the same x of predict_one, then of learn_one: its row is kept with x's
        # items (compared by value, in order) and the number of known features (which only grow,
        # so the same count means the same columns)
        items = tuple(x.items()) if type(x) is dict else None
        last = self.__dict__.get("_last_row")
        if items is not None and last is not None and last[1] == len(feats) and last[0] == items:
            return last[2]
        get = feats.get
        vals = [0.0] * len(feats)
        new = []
        sq, nonzero = 0.0, False
        for k, v in x.items():
            t = type(v)
            if t is float:
                fv = v
            else:
                if t is not int and (not isinstance(v, numbers.Number) or isinstance(v, complex)):
                    raise ValueError(f"feature {k!r} is {v!r}; {type(self).__name__} takes numbers only (encode "
                                     "other features first, e.g. with river.preprocessing.OneHotEncoder)")
                fv = float(v)  # any Number but complex (Decimal, Fraction, numpy scalars) converts
            if not math.isfinite(fv):
                raise ValueError(f"x holds a value that is not finite: {x!r}")
            j = get(k)
            if j is None:
                new.append(fv)
            else:
                vals[j] = fv
            if fv != 0.0:
                nonzero = True
                sq += fv * fv   # Python floats, in x's order: an overflow is inf, an underflow 0
        if new:
            vals += new
        if _INTERCEPT in feats:   # the constant 1; the range check is the features' own
            vals[0] = 1.0
        if nonzero:
            _check_sq(sq)
        row = np.array(vals, dtype=np.float64)
        if items is not None:
            self._last_row = (items, len(feats), row)
        return row

    def _add_features(self, x: dict) -> None:
        """Columns for the features of x not seen before, in the order of x (as :meth:`_row`)."""
        for k in x:
            if k not in self._features:
                self._features[k] = len(self._features)

    def _class_index(self, y) -> int | None:
        """The class index of y, or None for a class not seen yet; ValueError, with nothing
        changed, for a y that is no class label or that the given ``classes`` do not list."""
        _check_label(y)
        for k, c in enumerate(self._classes):
            if c == y:
                if _label_kind(c) != _label_kind(y):
                    # Python's == makes True == 1 == 1.0: two classes of other kinds must never merge
                    raise ValueError(f"label {y!r} equals the class {c!r} of another type; use labels of one "
                                     "type (all numbers, all booleans or all strings)")
                return k
        if self.classes is not None:
            raise ValueError(f"label {y!r} is not in classes {self.classes!r}")
        return None

    def _checked(self, x: dict, y, check=None) -> tuple[np.ndarray, int]:
        """Check the example (x, then y, then ``check(row, k)`` if given) before anything changes;
        then register its new features and, if new, its class (a new label column). Returns x's
        row and y's class index."""
        row = self._row(x)
        k = self._class_index(y)
        if check is not None:
            check(row, k)
        self._add_features(x)
        if k is None:
            self._classes.append(y)
            self._new_label()
            k = len(self._classes) - 1
        return row, k

    def _n_labels(self) -> int:
        fixed_binary = self.classes is not None and len(self._classes) == 2
        return 1 if fixed_binary else len(self._classes)

    def _label_row(self, k: int) -> np.ndarray:
        if self._n_labels() == 1 and self.classes is not None:
            return np.array([[1 if k == 1 else -1]], dtype=np.int8)
        row = -np.ones((1, self._n_labels()), dtype=np.int8)
        row[0, k] = 1
        return row

    def _decide(self, s: np.ndarray):
        """The class of the scores ``s`` (one per label column)."""
        if not self._classes:
            return None
        if self._n_labels() == 1 and self.classes is not None:
            return self._classes[int(s[0] > 0.0)]
        return self._classes[int(np.argmax(s))] if s.size else self._classes[0]

    def decision_one(self, x: dict) -> dict:
        """The score of each class's perceptron on ``x``.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).

        Returns
        -------
        dict
            Class -> score; with two given classes the score of ``classes[1]`` alone (> 0
            predicts it), under that key; empty before the first example.
        """
        if not self._started:
            return {}
        s = self._scores(x)
        if self._n_labels() == 1 and self.classes is not None:
            return {self._classes[1]: float(s[0])}
        return {c: float(v) for c, v in zip(self._classes, s)}

    def predict_one(self, x: dict):
        """The predicted class of ``x``.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).

        Returns
        -------
        object
            The class of the largest score (before the first example: the first given class, or
            None).
        """
        if not self._started:
            return self._classes[0] if self._classes else None
        return self._decide(self._scores(x))

    def predict_proba_one(self, x: dict):
        """Not provided: raises a NotImplementedError (River's signal for "no probabilities") that
        says why and names ``decision_one``.

        A perceptron's score ``y f(x)`` is a margin in the units of the kernel, not a probability,
        and nothing in these algorithms calibrates it; a calibration fitted on a stream (Platt's
        sigmoid, say) would be a second model with its own choices. Use ``decision_one`` for the
        scores, or ``predict_one`` for the class; River metrics that need probabilities (ROC AUC,
        log loss) do not apply.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no predict_proba_one: a perceptron's score is a margin, not a "
            "probability, and no calibration on a stream would be honest; use decision_one(x) for the scores "
            "(> 0 predicts the class) or predict_one(x) for the class")


class BudgetKernelPerceptron(_Online):
    """Kernel perceptrons on a memory budget, and NORMA, learning one example at a time.

    The algorithms and their settings are those of
    [`BudgetPerceptron`][perceptron_lab.estimators.budget.BudgetPerceptron] (see
    ``perceptron_lab.engine.budget`` for the papers and the readings of them), on the same
    jitted step and state.

    Parameters
    ----------
    algorithm : {"forgetron", "stoptron", "rbp", "projectron", "projectron++", "norma"}, default "forgetron"
        The budgeted algorithm.
    budget : int or None, default 100
        Most support vectors per class (NORMA: the truncation tau); None: no limit.
    eta : float or None, default None
        The Projectrons' threshold, or NORMA's learning rate; None: a config's default.
    lambda_ : float, default 0.0
        NORMA's regularization.
    rho : float, default 1.0
        NORMA's margin.
    schedule : {"constant", "sqrt"}, default "constant"
        NORMA's learning rate: ``constant`` (eta) or ``sqrt`` (eta / sqrt(t)).
    kernel : {"gaussian", "linear", "poly", "poly_gaussian"}, default "gaussian"
        ``linear``, ``poly`` ((1 + x.y / scale)^degree), ``gaussian`` (exp(-|x - y|^2 / (2 sigma^2)))
        or ``poly_gaussian``.
    degree : int, default 3
        Degree of the polynomial kernels.
    scale : float, default 1.0
        The scale of the poly kernel.
    sigma : float, default 1.0
        Width of the Gaussian kernels.
    fit_intercept : bool, default True
        A constant term through the kernel, K(x, y) + 1 (``perceptron_lab.engine.intercept``): the
        constant feature 1 with the linear kernel, ``poly_gaussian`` of degree 1 for a Gaussian
        kernel (K(x, x) = 2: the budgeted thresholds then read against 2); the poly kernels hold a
        constant term of their own either way. As River's linear models and scikit-learn's
        ``Perceptron``, which fit an intercept by default.
    rule : {"last", "avg"}, default "last"
        ``last`` (the current hypothesis) or ``avg`` (the sum of the hypotheses after each step).
        The voted rule, whose cost grows with the stream, is left to the batch estimator.
    classes : list or None, default None
        The classes, if known in advance (see the module docstring); None: learned as they come.
    seed : int, default 0
        Seed of the RBP's random removals (as ``random_state`` of the batch estimator).

    Examples
    --------
    >>> from perceptron_lab.estimators.online import BudgetKernelPerceptron
    >>> model = BudgetKernelPerceptron("rbp", budget=2, kernel="gaussian")
    >>> for x, y in [({"a": 0.0}, "no"), ({"a": 1.0}, "yes"), ({"a": 0.1}, "no"), ({"a": 0.9}, "yes")]:
    ...     model.learn_one(x, y)
    >>> model.predict_one({"a": 0.95}), model.predict_one({"a": 0.05})
    ('yes', 'no')
    """

    #: The settings, from the config schema (perceptron_lab.config.settings): their ranges are the
    #: config keys' ranges; ``eta=None`` is the config's default, and the rules are those of a stream.
    _schema_settings = door(of="norma", algorithm={"options": BUDGET_ALGORITHMS}, budget={}, eta={"none": True},
                            lambda_={}, rho={}, schedule={}, seed={}, **_KERNEL_SETTINGS)
    #: the run, from the first example on (None before it)
    _run: BudgetRun | None

    def __init__(self, algorithm: str = "forgetron", budget: int | None = 100, eta: float | None = None,
                 lambda_: float = 0.0, rho: float = DEFAULT_NORMA_RHO, schedule: str = "constant",
                 kernel: str = "gaussian", degree: int = 3, scale: float = 1.0, sigma: float = 1.0,
                 rule: str = "last", classes: list | None = None, seed: int = 0, fit_intercept: bool = True):
        self.algorithm = algorithm
        self.fit_intercept = fit_intercept
        self.budget = budget
        self.eta = eta
        self.lambda_ = lambda_
        self.rho = rho
        self.schedule = schedule
        self.kernel = kernel
        self.degree = degree
        self.scale = scale
        self.sigma = sigma
        self.rule = rule
        self.classes = classes
        self.seed = seed
        self._setup()
        try:
            self._kernel = intercept_kernel(Kernel(kernel, int(degree) if kernel in ("poly", "poly_gaussian") else 1,
                                                   float(scale), float(sigma)), bool(fit_intercept))
            self._params = BudgetParams(algorithm=algorithm, budget=_NO_LIMIT if budget is None else int(budget),
                                        eta=default_eta(algorithm) if eta is None else float(eta),
                                        lam=float(lambda_), rho=float(rho), schedule=schedule,
                                        seed=_plab_order(int(seed), 1)[1])
            self._params.validate(1)  # the settings together (NORMA: eta * lambda < 1)
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        self._run = None
        # K(x, x) is known in advance for the Gaussian kernels (1, or 2^d): a Projectron whose eta
        # reaches sqrt of it, or NORMA with rho = 0, can never update (engine.families.never_updates)
        kxx = {"gaussian": 1.0, "poly_gaussian": 2.0 ** self._kernel.degree}.get(self._kernel.name, math.inf)
        why = never_updates(BudgetSettings(name=algorithm, eta=eta, rho=rho), kxx, prefix="")
        if why:
            warnings.warn(f"{type(self).__name__}: {why}", UserWarning, stacklevel=2)

    @classmethod
    def _unit_test_params(cls):
        # River's checks stream raw features (ImageSegments: examples up to 1523 apart); sigma 50
        # keeps every Gaussian kernel value there within float64's range (at sigma 2 most underflow,
        # and learn_one refuses the steps whose update their lost signs would decide)
        yield {"algorithm": "forgetron", "budget": 20, "kernel": "gaussian", "sigma": 50.0}
        yield {"algorithm": "projectron++", "budget": None, "eta": 0.5, "sigma": 50.0, "rule": "avg"}

    def _new_label(self) -> None:
        if self._run is not None and self._n_labels() > self._run.Y.shape[1]:
            self._run.add_label()

    def learn_one(self, x: dict, y) -> None:
        """One step of the algorithm on ``(x, y)``: the prediction, and the update if it errs.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).
        y : object
            Its class (a class not seen before is added, unless the classes were given).

        Raises
        ------
        ValueError
            For an x that is not a dict of finite numbers in float64's range, or a y that is no
            class label (None, NaN) or not among the given classes; where ``K(x, x)`` or the score
            that decides the update overflows float64, or (Gaussian kernel) the score's sign is
            lost below its range and would decide the update otherwise than the exact score's.
            The model is then unchanged.
        """
        row, k = self._checked(x, y, self._check_step)
        if self._run is None:
            L = max(self._n_labels(), 1)
            self._run = BudgetRun(np.zeros((0, row.size)), np.zeros((0, L), np.int8), self._kernel, self._params,
                                  record=False, memory_limit_gb=float("inf"))
            self._run.keep_events = False
        run = self._run
        run.widen(row.size)
        idx = run.add_examples(row[None, :], self._label_row(k))
        run.steps(idx, 1)
        run.drop_last_unused()
        if self.rule == "last" and run.X.shape[0] > 2 * int(run.size.sum()) + 64:
            run.compact(keep_avg=False)  # rows of removed support vectors: the last rule never reads them
        self._started = True

    def _check_step(self, row: np.ndarray, k: int | None) -> None:
        """Refuse, before anything changes, an example whose step float64 cannot compute: its
        ``K(x, x)`` or its score under the current hypotheses (which decides the update)
        overflowing, or, with every Gaussian kernel value below float64's range, a score whose
        sign (0 or a few bits) is not the algorithm's (:meth:`_kernel_scores`). ``k``: the
        example's class index (None for a class not seen yet)."""
        with np.errstate(over="ignore"):
            kxx = float(kernel_diag(self._kernel, row[None, :])[0])
        if not math.isfinite(kxx):
            raise ValueError(f"K(x, x) of this example overflows float64 ({self._kernel.describe()} kernel, "
                             f"|x|^2 = {float(row @ row):.3g}). {self._overflow_fix(row)}")
        if self._run is None:
            return
        scores, signs, d = self._kernel_scores(row, self._run.hypotheses(avg=False)[0])
        if signs is scores:
            return
        fixed_binary = self.classes is not None and len(self._classes) == 2
        y = np.array([1.0 if k == 1 else -1.0] if fixed_binary else
                     [1.0 if c == k else -1.0 for c in range(scores.size)])
        # the step's tests on y f(x): y f <= 0 (a mistake; Projectron++'s margin errors are 0 < y f < 1),
        # NORMA's y f < rho, which every score this small passes when rho > 0
        if self._params.algorithm == "norma":
            differs = self._params.rho == 0 and np.any((y * scores < 0) != (y * signs < 0))
        else:
            differs = np.any((y * scores <= 0) != (y * signs <= 0))
        if differs:
            raise ValueError(
                f"this example is {d:.3g} from the nearest support vector ({d / self._kernel.sigma:.3g} sigma): every "
                "Gaussian kernel value against the support vectors is below float64's range, so its score comes out "
                "0 (or a few bits), and the update would be decided against the sign of its true score. Fix: set "
                f"sigma near {d / 30.0:.3g} or larger (or standardize the features)")

    def _overflow_fix(self, row: np.ndarray) -> str:
        """What to change when kernel values or scores overflow, for this kernel."""
        if self._kernel.name == "poly":
            run = self._run
            top = max(float(row @ row), float(run.sq.max()) if run is not None and run.sq.size else 0.0)
            d = int(self._kernel.degree)
            # (1 + |x|^2 / s)^d <= 1e200 for every |x|^2 up to top leaves room for sums of many terms
            s_min = top / (10.0 ** (200.0 / d) - 1.0)
            return (f"Fix: set scale to at least {s_min:.3g} (|x|^2 reaches {top:.3g}), lower degree (now {d}), or "
                    "divide every feature of the stream by one constant")
        if self._kernel.name == "poly_gaussian":
            return f"Fix: lower degree (now {int(self._kernel.degree)})"
        return "Fix: divide every feature of the stream by one constant that brings them near 1"

    def _kernel_scores(self, row: np.ndarray, state):
        """``(scores, signs, d)``: the scores of ``row`` under ``state`` (per label: support
        examples and coefficients), from one kernel row against their union, as the engine
        computes them; ``signs``, scores with the signs and argmax of the exact ones; ``d``, the
        distance to the nearest support vector where it matters (else 0).

        ``signs`` is ``scores`` itself, except with a Gaussian kernel whose every value
        ``K(x_j, x)`` is below ``2^-960`` (x farther than about 36 sigma from every support vector):
        those values underflow float64 (0 beyond 37.6 sigma), and the scores come out 0 or a few
        bits whatever their true signs. ``signs`` then holds the scores times
        ``exp(d^2 / (2 sigma^2))``, one positive factor for every label, taken inside the
        exponentials: the nearest support vector's term is its coefficient, every number in range.

        A ValueError, which changes nothing, where a kernel value, or the sum of the terms'
        magnitudes ``sum_j |a_j K(x_j, x)|`` (which bounds every partial sum, in any order), is not
        below half the largest float64: the score is not a number (inf, or NaN from inf - inf),
        and before this check ``predict_one`` returned a class for it.
        """
        run = self._run
        assert run is not None   # scores are asked of a started run only
        L = len(state)
        union = np.unique(np.concatenate([exs for exs, _ in state])) if L else np.empty(0, np.int64)
        if union.size == 0:
            return np.zeros(L), np.zeros(L), 0.0
        A = np.zeros((union.size, L))
        for c, (exs, coefs) in enumerate(state):
            np.add.at(A[:, c], np.searchsorted(union, exs), coefs)  # an example may hold several terms (NORMA)
        Xu = run.X[union]
        if row.size > Xu.shape[1]:
            Xu = np.pad(Xu, ((0, 0), (0, row.size - Xu.shape[1])))
        Xu = np.ascontiguousarray(Xu)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            K = gram(self._kernel, row[None, :], Xu)[0]
            size = ordered.vecmat(np.abs(K), np.abs(A))
            scores = ordered.vecmat(K, A)   # added in a fixed order: the same bits on any machine
        if not (np.all(np.isfinite(K)) and np.all(size <= _F64.max / 2)):
            top = float(np.max(np.abs(K))) if np.all(np.isfinite(K)) else math.inf
            raise ValueError(f"the score of this example overflows float64 ({self._kernel.describe()} kernel: "
                             f"kernel values against the support vectors reach {top:.3g}, the sum of the terms "
                             f"{float(np.max(size)):.3g}), so no class can be predicted from it. "
                             f"{self._overflow_fix(row)}")
        if self._kernel.name != "gaussian" or float(np.max(K)) >= _GAUSS_FLOOR:
            return scores, scores, 0.0
        d2 = np.maximum(run.sq[union] + ordered.vdot(row, row) - 2.0 * ordered.matvec(Xu, row), 0.0)
        near = float(np.min(d2))
        with np.errstate(under="ignore"):
            signs = ordered.vecmat(ordered.exp_array(-(d2 - near) / (2.0 * self._kernel.sigma ** 2)), A)
        return scores, signs, math.sqrt(near)

    def _scores(self, x: dict) -> np.ndarray:
        return self._kernel_scores(*self._state(x))[0]

    def _state(self, x: dict):
        assert self._run is not None   # predictions before the first example return earlier
        last, summed = self._run.hypotheses(avg=self.rule == "avg")
        return self._row(x), last if self.rule == "last" else summed

    def predict_one(self, x: dict):
        """The predicted class of ``x``.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).

        Returns
        -------
        object
            The class of the largest score (before the first example: the first given class, or
            None). With a Gaussian kernel and ``x`` so far from every support vector that its
            scores are below float64's range (about 37 sigma), the class of the largest exact
            score, which ``decision_one`` shows as 0.

        Raises
        ------
        ValueError
            Where a score overflows float64 (a polynomial kernel of a high degree, or a small
            ``scale``, on large features): no class is predicted from a score that is not a number.
        """
        if not self._started:
            return self._classes[0] if self._classes else None
        return self._decide(self._kernel_scores(*self._state(x))[1])

    @property
    def n_support_(self) -> dict:
        """The number of support vectors of each class's perceptron (with two given classes, of
        the one perceptron, under ``classes[1]``, the class it scores positive)."""
        if self._run is None:
            return {}
        if self._n_labels() == 1 and self.classes is not None:
            return {self._classes[1]: int(self._run.size[0])}
        return {c: int(s) for c, s in zip(self._classes, self._run.size)}

    @property
    def n_mistakes_(self) -> int:
        """Prediction mistakes so far, over every class's perceptron."""
        return 0 if self._run is None else int(self._run.mistakes.sum())


class KernelPerceptron(BudgetKernelPerceptron):
    """The kernel perceptron (Freund & Schapire 1999, Figure 1), learning one example at a time.

    On a mistake ``y f(x) <= 0`` of a class's perceptron, ``f <- f + y K(x, .)``: the Stoptron
    without a budget, on the budgeted engine's step and state. ``rule="avg"`` is the averaged
    perceptron (the sum of the hypotheses after each step).

    Parameters
    ----------
    kernel : {"poly", "linear", "gaussian", "poly_gaussian"}, default "poly"
        The kernel, as in [`VotedPerceptron`][perceptron_lab.estimators.perceptron.VotedPerceptron].
    degree : int, default 3
        Degree of the polynomial kernels.
    scale : float, default 1.0
        The scale of the poly kernel.
    sigma : float, default 1.0
        Width of the Gaussian kernels.
    rule : {"last", "avg"}, default "last"
        The current hypothesis, or the sum of the hypotheses after each step.
    classes : list or None, default None
        The classes, if known in advance; None: learned as they come.
    fit_intercept : bool, default True
        A constant term through the kernel, K(x, y) + 1, as for
        [`BudgetKernelPerceptron`][perceptron_lab.estimators.online.BudgetKernelPerceptron].

    Examples
    --------
    >>> from perceptron_lab.estimators.online import KernelPerceptron
    >>> model = KernelPerceptron(kernel="poly", degree=2)  # XOR: no linear separator, a quadratic one
    >>> data = [({"a": 1, "b": 1}, 1), ({"a": -1, "b": 1}, 0), ({"a": -1, "b": -1}, 1), ({"a": 1, "b": -1}, 0)]
    >>> for _ in range(3):
    ...     for x, y in data:
    ...         model.learn_one(x, y)
    >>> [model.predict_one(x) for x, _ in data]
    [1, 0, 1, 0]
    """

    _schema_settings = door(**_KERNEL_SETTINGS)
    #: a LinearRun (the linear kernel, in primal form) or, for the other kernels, the parent's BudgetRun
    _run: Any

    def __init__(self, kernel: str = "poly", degree: int = 3, scale: float = 1.0, sigma: float = 1.0,
                 rule: str = "last", classes: list | None = None, fit_intercept: bool = True):
        super().__init__("stoptron", None, kernel=kernel, degree=degree, scale=scale, sigma=sigma, rule=rule,
                         classes=classes, fit_intercept=fit_intercept)

    @classmethod
    def _unit_test_params(cls):
        yield {"kernel": "gaussian", "sigma": 50.0}  # see BudgetKernelPerceptron._unit_test_params
        yield {"kernel": "poly", "degree": 2, "scale": 20.0, "rule": "avg"}
        yield {"kernel": "linear", "rule": "avg"}

    # ------------------------------------------------------------------ the linear kernel: primal form
    #
    # With kernel="linear" the hypothesis is one weight vector per label (perceptron_lab.engine.
    # online_linear): a step costs O(labels x features), not O(labels x mistakes x features) as the
    # dual form's, and the scores are sequential sums in a fixed order, so learn_many is learn_one
    # looped, bit for bit.

    @property
    def _primal(self) -> bool:
        return self.kernel == "linear"

    def _new_label(self) -> None:
        if not self._primal:
            return super()._new_label()
        if self._run is not None:
            while self._n_labels() > self._run.n_labels:
                self._run.add_label()

    def learn_one(self, x: dict, y) -> None:
        """One step on ``(x, y)``: the prediction of each class's perceptron, and its update
        ``w <- w + y x`` where it errs (``y w.x <= 0``); with ``kernel="linear"`` in primal form.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).
        y : object
            Its class (a class not seen before is added, unless the classes were given).

        Raises
        ------
        ValueError
            For an x that is not a dict of finite numbers in float64's range, or a y that is no
            class label or not among the given classes; where a score that decides the update is
            not a finite float64 number. The model is then unchanged.
        """
        if not self._primal:
            return super().learn_one(x, y)
        n_features, n_classes = len(self._features), len(self._classes)
        row = self._row(x)
        k = self._class_index(y)
        if row.size > n_features:   # x's new features, in x's order (as _checked registers them)
            self._add_features(x)
        if k is None:
            self._classes.append(y)
            k = len(self._classes) - 1
        if self._run is None:
            self._run = LinearRun(max(self._n_labels(), 1))
        run = self._run
        self._new_label()
        run.widen(row.size)
        ylab = self._ylab(k)
        if not run.learn_one(row, ylab):  # a score that is not finite: nothing learned, nothing registered
            for key in list(self._features)[n_features:]:
                del self._features[key]
            labels = self._n_labels() if len(self._classes) == n_classes else None
            del self._classes[n_classes:]
            if labels is None:
                labels = self._n_labels()
                run.W, run.V, run.mistakes = run.W[:labels], run.V[:labels], run.mistakes[:labels]
            raise ValueError(f"the score of this example overflows float64 (|x|^2 = {float(row @ row):.3g}), so its "
                             "update cannot be decided. Fix: divide every feature of the stream by one constant "
                             "that brings them near 1")
        self._started = True

    def learn_many(self, X, y) -> None:
        """Learn the rows of ``X`` (a pandas DataFrame, columns the features) with the labels ``y``
        in order: the model ``learn_one`` gives on them one after another, bit for bit (the same
        jitted step on the same rows; a class not seen before starts its perceptron where that row
        comes). Every row is checked first: an invalid one (a value that is not a finite number in
        float64's range, a label that is no class) raises a ValueError and nothing is learned.
        With ``kernel="linear"`` only (the primal form)."""
        if not self._primal:
            raise ValueError(f"learn_many runs the primal form of the linear kernel; with kernel={self.kernel!r} "
                             "call learn_one for each example")
        cols = list(X.columns)
        self._learn_rows([dict(zip(cols, r)) for r in X.itertuples(index=False, name=None)], list(y))

    def _learn_rows(self, xs: list, ys: list) -> None:
        """The steps of ``(xs[i], ys[i])`` in order, each row checked (and its features and class
        registered) as :meth:`learn_one` does; rows are learned in batches between new classes, so
        that a new class's perceptron starts where its first example comes. A refused row puts the
        model back as it was before the call."""
        if len(xs) != len(ys):
            raise ValueError(f"X has {len(xs)} rows and y {len(ys)} labels")
        kept = (dict(self._features), list(self._classes), self._started)
        run = self._run
        labels_before = 0 if run is None else run.n_labels
        saved = _copy_linear(run) if run is not None and len(xs) > 1 else None
        try:
            rows: list[np.ndarray] = []
            labels: list[int] = []
            for x, y in zip(xs, ys):
                if rows and self._class_index(y) is None:  # a new class: its perceptron starts here
                    self._learn_batch(rows, labels)
                    rows, labels = [], []
                row, k = self._checked(x, y)
                rows.append(row)
                labels.append(k)
            if rows:
                self._learn_batch(rows, labels)
        except ValueError:
            self._features, self._classes, self._started = kept
            if saved is not None:
                self._run = saved
            elif run is None:
                self._run = None
            else:  # one row: the step changed no weight; only a label column may have been added
                run.W, run.V, run.mistakes = run.W[:labels_before], run.V[:labels_before], run.mistakes[:labels_before]
            raise

    def _learn_batch(self, rows: list, labels: list) -> None:
        if self._run is None:
            self._run = LinearRun(max(self._n_labels(), 1))
        run = self._run
        self._new_label()
        width = len(self._features)
        run.widen(width)
        if len(rows) == 1 and rows[0].size == width:
            X = rows[0][None, :]
        else:
            X = np.zeros((len(rows), width))
            for i, r in enumerate(rows):
                X[i, :r.size] = r
        Y = np.concatenate([self._label_row(k) for k in labels]).astype(np.float64)
        done = run.learn(X, Y)
        if done < len(rows):
            raise ValueError(f"the score of an example overflows float64 (|x|^2 = {float(X[done] @ X[done]):.3g}), "
                             "so its update cannot be decided. Fix: divide every feature of the stream by one "
                             "constant that brings them near 1")
        self._started = True

    def _scores(self, x: dict) -> np.ndarray:
        if not self._primal:
            return super()._scores(x)
        s = self._run.score_one(self._row(x), self.rule == "avg")  # features never learned: weight 0
        if not all(math.isfinite(v) for v in s.tolist()):
            raise ValueError("a score of this example overflows float64, so no class can be predicted from it. Fix: "
                             "divide every feature of the stream by one constant that brings them near 1")
        return s

    def _ylab(self, k: int) -> np.ndarray:
        """The +1/-1 label row of class index ``k`` as float64 (cached: a stream asks it every step)."""
        key = (k, self._n_labels())
        cache = self.__dict__.setdefault("_ylab_cache", {})
        out = cache.get(key)
        if out is None:
            out = cache[key] = self._label_row(k)[0].astype(np.float64)
        return out

    def _linear_scores(self, X: np.ndarray) -> np.ndarray:
        S = self._run.scores(X, avg=self.rule == "avg")  # features never learned have weight 0
        if not all(math.isfinite(v) for v in S.flat):
            raise ValueError("a score of this example overflows float64, so no class can be predicted from it. Fix: "
                             "divide every feature of the stream by one constant that brings them near 1")
        return S

    def predict_one(self, x: dict):
        """The predicted class of ``x``.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).

        Returns
        -------
        object
            The class of the largest score (before the first example: the first given class, or
            None), as for
            [`BudgetKernelPerceptron.predict_one`][perceptron_lab.estimators.online.BudgetKernelPerceptron.predict_one].
        """
        if not self._primal:
            return super().predict_one(x)
        if not self._started:
            return self._classes[0] if self._classes else None
        return self._decide(self._scores(x))

    def predict_many(self, X):
        """The predicted classes of the rows of ``X`` (a pandas DataFrame), as ``predict_one`` row by
        row, as a pandas Series. With ``kernel="linear"`` only."""
        import pandas as pd

        if not self._primal:
            raise ValueError(f"predict_many runs the primal form of the linear kernel; with kernel={self.kernel!r} "
                             "call predict_one for each example")
        cols = list(X.columns)
        return pd.Series([self.predict_one(dict(zip(cols, r))) for r in X.itertuples(index=False, name=None)],
                         index=X.index)

    @property
    def n_support_(self) -> dict:
        """The support vectors of each class's perceptron: with ``kernel="linear"`` (primal form),
        its mistakes, one support vector each in the dual form."""
        if not self._primal:
            return super().n_support_
        if self._run is None:
            return {}
        if self._n_labels() == 1 and self.classes is not None:
            return {self._classes[1]: int(self._run.mistakes[0])}
        return {c: int(s) for c, s in zip(self._classes, self._run.mistakes)}


def _copy_linear(run: LinearRun) -> LinearRun:
    """A copy of a primal run's state (a refused batch puts it back)."""
    out = LinearRun.__new__(LinearRun)
    out.W, out.V, out.t, out.mistakes = run.W.copy(), run.V.copy(), run.t, run.mistakes.copy()
    out._scores = np.empty(run.n_labels)
    return out


class ALMA(_Online):
    """ALMA_p(alpha; B, C) of Gentile (2001), Figure 1, learning one example at a time.

    A correction happens when ``y w_k . x^ <= (1 - alpha) B sqrt(p - 1) / sqrt(k)`` on the
    p-normalized instance ``x^``; the step is ``C / (sqrt(p - 1) sqrt(k))``, and the hypothesis is
    projected onto the unit ball. Primal form (the linear kernel), any p >= 2, one weight vector
    per class; the prediction is the last hypothesis's (``sign(w . x)``, or the class of the
    largest score). For a kernel ALMA_2 use [`perceptron_lab.ALMA`][perceptron_lab.estimators.perceptron.ALMA]
    (``partial_fit``).

    Parameters
    ----------
    p : float, default 2.0
        The norm p (>= 2).
    alpha : float, default 1.0
        Approximation parameter in (0, 1].
    B : float, "1/alpha", "sqrt8/alpha" or None, default None
        Margin scale: a number, None or "1/alpha" (Gentile's default), or "sqrt8/alpha".
    C : float, default sqrt(2)
        Step scale.
    classes : list or None, default None
        The classes, if known in advance; None: learned as they come.
    fit_intercept : bool, default True
        A constant feature 1 (column 0 of every instance, before the p-normalization), whose weight
        is the intercept, as in the batch [`perceptron_lab.ALMA`][perceptron_lab.estimators.perceptron.ALMA].

    Examples
    --------
    >>> from perceptron_lab.estimators.online import ALMA
    >>> model = ALMA(alpha=0.9)
    >>> for x, y in [({"a": 1.0, "b": 0.2}, True), ({"a": -1.0, "b": 0.1}, False)] * 3:
    ...     model.learn_one(x, y)
    >>> model.predict_one({"a": 0.7}), model.predict_one({"a": -0.4})
    (True, False)
    """

    #: The settings, from the config schema (perceptron_lab.config.settings).
    _schema_settings = door(of="alma", p={}, alpha={}, B={}, C={}, fit_intercept={})

    def __init__(self, p: float = 2.0, alpha: float = 1.0, B: float | str | None = None, C: float = DEFAULT_ALMA_C,
                 classes: list | None = None, fit_intercept: bool = True):
        self.fit_intercept = fit_intercept
        self.p = p
        self.alpha = alpha
        self.B = B
        self.C = C
        self.classes = classes
        self._setup()
        self._B = float(resolve_B(B, float(alpha)))
        # the engine's ALMA_p run in primal form, continued one example at a time
        self._run = PrimalRun(self._n_labels(), 0, AlmaParams(alpha=float(alpha), B=self._B, C=float(C), p=float(p)),
                              record=False)

    @classmethod
    def _unit_test_params(cls):
        yield {"alpha": 0.9}
        yield {"p": 3.0, "alpha": 0.8, "B": "sqrt8/alpha"}

    def _new_label(self) -> None:
        while self._n_labels() > self._run.n_labels:
            self._run.add_label()

    def learn_one(self, x: dict, y) -> None:
        """One step of Figure 1 on ``(x, y)`` for every class's hypothesis.

        Parameters
        ----------
        x : dict
            The example's features, by name (a name not seen before is a new feature, 0 in every
            earlier example).
        y : object
            Its class (a class not seen before is added, unless the classes were given).

        Raises
        ------
        ValueError
            For an x that is not a dict of finite numbers in float64's range, or a y that is no
            class label (None, NaN) or not among the given classes; where a correction test
            cannot be decided in float64 (p in the hundreds or more, alpha = 1: see the module
            docstring). The model is then unchanged.
        """
        self._row(x)
        self._class_index(y)   # checked before anything is set aside
        run = self._run
        kept = (dict(self._features), list(self._classes), run.theta, run.W, run.ncorr, run.cum_correct)
        row, k = self._checked(x, y)
        try:
            run.widen(row.size)
            run.steps(pnormalize(row[None, :], run.p), np.array([bool(np.any(row != 0))]), self._label_row(k),
                      np.zeros(1, np.int64))
        except NumericError as exc:  # a correction test float64 cannot decide: nothing changes
            self._features, self._classes, run.theta, run.W, run.ncorr, run.cum_correct = kept
            raise ValueError(str(exc).replace("algorithm.", "")) from None
        self._started = True

    def _scores(self, x: dict) -> np.ndarray:
        run = self._run
        row = self._row(x)[:run.W.shape[1]]  # features never learned have weight 0
        W, theta = run.W[:, :row.size], run.theta[:, :row.size]
        s = ordered.matvec(W, row)
        # with p in the hundreds, the weights far below the largest one underflow: a score that
        # is within what they add up to of deciding otherwise is refused, never a guess
        u = unresolved_bound(theta, W, row)
        if u.any():
            if self._n_labels() == 1 and self.classes is not None:
                open_ = u[0] > 0 and abs(s[0]) <= u[0]
            else:
                top = int(np.argmax(s))
                open_ = any(c != top and (u[c] > 0 or u[top] > 0) and s[c] + u[c] >= s[top] - u[top]
                            for c in range(s.size))
            if open_:
                raise ValueError(
                    f"ALMA_p with p = {run.p:g}: the class of this example turns on score differences within what "
                    f"the terms below float64's range add up to ({float(u.max()):.3g}; for p this large the weights "
                    "far below the largest one underflow), so it cannot be decided. Fix: use a smaller p")
        return s

    @property
    def n_corrections_(self) -> int:
        """Corrections so far (the k of Figure 1, summed over the classes' hypotheses)."""
        return int(self._run.ncorr.sum())

