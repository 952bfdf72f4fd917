"""scikit-learn estimators over the engine and prediction rules that ``plab run`` uses.

* :class:`VotedPerceptron`: Freund & Schapire (1999), the (kernel) voted perceptron, Figure 1,
  with every prediction rule of §5.
* :class:`MarginPerceptron`: Khardon & Wachman (2007), Figure 2: the perceptron with margin
  ``tau``, the lambda-trick, the alpha-bound, a threshold and the longest survivor.
* :class:`ALMA`: Gentile (2001), Figure 1: ALMA_p(alpha; B, C); kernels for p = 2.

Each is a thin wrapper: ``fit`` trains through :func:`perceptron_lab.engine.train_algorithm`
(the call ``plab run`` makes for every unit) and ``predict`` / ``decision_function`` score with
:func:`perceptron_lab.model.predict.decision_scores`, the jitted scoring of
:func:`perceptron_lab.model.predict.evaluate`, so an estimator's predictions are exactly those behind
the error rates of ``plab run``. ``random_state = s`` trains in the order of permutation 0 of a
``plab run`` with ``training.seed: s`` (and draws the random rule's time slices as that run does).

Multiclass problems are one-vs-rest over ``classes_`` (the label with the largest score wins, the
first on ties); with two classes one perceptron separates ``classes_[1]`` (score > 0) from
``classes_[0]``. ``kernel="precomputed"`` follows :class:`sklearn.svm.SVC`: ``fit`` takes the
Gram matrix K(train, train), ``predict`` the matrix K(test, train).

Labels are scikit-learn's: ``classes_`` is :func:`numpy.unique` of ``y`` as numpy holds it, so two
samples are one class when numpy finds their labels equal (integers of any width exactly, floats
by value, -0.0 being 0.0, strings exactly), and ``predict`` returns values of ``classes_``, in its
dtype. A list or object array that numpy could only hold by changing some labels is refused
rather than merged: strings mixed with numbers ('1' and 1), booleans mixed with numbers (True and
1), integers that are not exactly floats mixed with floats (2**53 + 1 and 1.5), and missing labels.

Example::

    >>> from perceptron_lab import VotedPerceptron
    >>> clf = VotedPerceptron(kernel="poly", degree=4, epochs=1).fit(X_train, y_train)  # doctest: +SKIP
    >>> clf.score(X_test, y_test)                                                        # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import warnings
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import InvalidParameterError, Options
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from perceptron_lab.config.settings import Setting, door
from perceptron_lab.constants import DEFAULT_ALMA_C, DEFAULT_CACHE_LIMIT_GB, DEFAULT_CHUNK
from perceptron_lab.engine import label_matrix, train_algorithm
from perceptron_lab.engine.families import AlmaSettings, PerceptronSettings, Settings
from perceptron_lab.engine.intercept import intercept_constant, intercept_kernel, needs_feature, with_intercept
from perceptron_lab.engine.seeds import training_order
from perceptron_lab.engine.linear import has_affine_form, sparse_refusal
from perceptron_lab.errors import PlabError
from perceptron_lab.engine.kernels import Kernel, as_csr
from perceptron_lab.model import bounds
from perceptron_lab.model.predict import _EXPANSION_RULES as COMBINED_RULES
from perceptron_lab.model.predict import RULE_INDEX, combined_decision_scores, decision_scores, distinct
from perceptron_lab.engine.threads import threads_for

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data
except ImportError:  # pragma: no cover
    def _validate_data(est, *args, **kwargs):
        return est._validate_data(*args, **kwargs)

__all__ = ["VotedPerceptron", "MarginPerceptron", "ALMA"]


class _SchemaConstraint(Options):
    """A scikit-learn constraint that is a setting of :mod:`perceptron_lab.config.settings`: the
    config schema's check, so that an estimator's range is the config key's range. (An ``Options``
    only because scikit-learn's ``make_constraint`` takes no constraint type of its own; it lists
    no options and is satisfied by what the setting accepts.)"""

    def __init__(self, setting: Setting):
        super().__init__(object, set())
        self.setting = setting

    def is_satisfied_by(self, val) -> bool:
        return self.setting.accepts(val)

    def __str__(self) -> str:
        return self.setting.noun


def _constraints(settings: dict[str, Setting]) -> dict:
    """scikit-learn ``_parameter_constraints`` entries of a door's settings."""
    return {name: [_SchemaConstraint(s)] for name, s in settings.items()}


def check_fit_size(owner: str, n: int, epochs: float | None = None) -> None:
    """Refuse, before any work, a training run that ``plab run``'s size guard would refuse
    (:func:`perceptron_lab.model.bounds.over_limit`, the limits of
    :func:`~perceptron_lab.model.bounds.check_run_size`): ``epochs`` passes over ``n`` examples
    (``fit``), or ``n`` steps (``epochs=None``: a ``partial_fit`` replaying its sequence)."""
    e = bounds.estimate_size(1, 1.0 if epochs is None else float(epochs), int(n), 1)
    if bounds.over_limit(e) is None:
        return
    limit = bounds.MAX_TRAIN_STEPS
    cost = f"{e['steps']:.3g} training steps, about {e['hours']:.3g} hours of training"
    if epochs is None:
        raise ValueError(f"{owner}.partial_fit would train on a sequence of {n} steps ({cost}), more than plab's "
                         f"size guard allows ({limit:.0e} training steps); fit on fewer examples")
    raise ValueError(f"The 'epochs' parameter of {owner} must be at most {limit / max(n, 1):.3g} with {n} examples "
                     f"(plab's size guard: at most {limit:.0e} training steps). Got {float(epochs):g} instead: "
                     f"{cost}")


def _plab_order(seed: int, n: int):
    """(the training order of ``plab run``'s permutation 0 on a fixed test split with
    ``training.seed = seed`` on n examples, the seed of its random rule)."""
    return training_order(n, seed)


def _check_label_types(y, name: str = "y") -> None:
    """Refuse labels that numpy would merge on conversion to one array: a list or object array
    mixing strings with numbers ('1' and 1 both become the string '1'), booleans with numbers
    (True becomes 1), integers with floats when an integer is not exactly a float (2**53 + 1 and
    2**53 become one float), and missing labels (None, pd.NA). Typed numpy and pandas arrays are
    already one type: their values are taken as numpy compares them."""
    dtype = getattr(y, "dtype", None)
    if y is None or (dtype is not None and getattr(dtype, "kind", "O") != "O"):
        return  # None: scikit-learn's own check says that y is required
    values = np.asarray(y, dtype=object).ravel()
    kinds, first = set(), {}
    for i, v in enumerate(values.tolist()):
        if isinstance(v, (str, bytes)):
            k = "string"
        elif isinstance(v, (bool, np.bool_)):
            k = "boolean"
        elif isinstance(v, Integral):
            k = "integer"
        elif isinstance(v, Real):
            k = "float"
        else:
            raise ValueError(f"{name}[{i}] is {v!r}, not a class label: give every sample a label (str, int, float "
                             "or bool)")
        if k not in kinds:
            kinds.add(k)
            first[k] = (i, v)
    groups = {"string" if k == "string" else "boolean" if k == "boolean" else "number" for k in kinds}
    if len(groups) > 1:
        (i, a), (j, b) = sorted(first.values())[:2]
        raise ValueError(f"{name} mixes label types ({name}[{i}] = {a!r}, {name}[{j}] = {b!r}), which numpy turns "
                         "into one type, merging classes such as '1' and 1 or True and 1: give labels of one type")
    if kinds == {"integer", "float"}:
        for i, v in enumerate(values.tolist()):
            if isinstance(v, Integral) and not _exact_float(v):
                raise ValueError(f"{name}[{i}] = {v} is not exactly a float, and {name} also holds floats: numpy "
                                 "would round it and may merge two classes; give integer labels only, or an "
                                 "object array of Python ints")


def _exact_float(v) -> bool:
    v = int(v)  # a Python int: numpy would compare a numpy integer with a float as float64
    try:
        return float(v) == v
    except OverflowError:
        return False


def _encode(y, classes):
    """Class indices of the labels ``y`` in ``classes`` by exact equality (Python's, which compares
    ints and floats exactly; np.searchsorted would compare uint64 with int64 as float64)."""
    index = {c: k for k, c in enumerate(classes.tolist())}
    values = np.asarray(y).tolist()
    unknown = [v for v in dict.fromkeys(values) if v not in index]
    if unknown:
        raise ValueError(f"labels {unknown[:10]} are not in classes {classes}")
    return np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))



def _value_error(exc: PlabError) -> ValueError:
    """The ValueError an estimator raises for ``exc``. A fix that names a config's preprocessing
    (``dataset.preprocess``) gets its Python counterpart, which works on X at any scale."""
    msg = str(exc)
    if "dataset.preprocess" in msg:
        msg += (" (from Python: divide X, for fit and predict alike, by one constant such as the largest "
                "|x| of the training set; scikit-learn's scalers leave columns whose scale is below 1e-15 as "
                "they are)")
    return ValueError(msg)

def _refuse_fit_params(owner: str, method: str, params: dict) -> None:
    """Refuse keyword arguments of ``fit`` / ``partial_fit`` beyond X, y (and classes), naming the
    public class: a TypeError as Python's own, and for ``sample_weight`` and ``class_weight`` why.
    Every update rule plab implements (Freund & Schapire 1999, Figure 1; Khardon & Wachman 2007,
    Figure 2; Gentile 2001, Figure 1; the budgeted algorithms) adds a mistake or correction with a
    weight of 1, and the engine has no weighted update: accepting weights and ignoring them would
    fit another model than the one asked for. The parameters are not in the signature, so that
    scikit-learn's tools (``has_fit_parameter``) see that weights are not supported."""
    if not params:
        return
    name = next(iter(params))
    if name in ("sample_weight", "class_weight"):
        raise TypeError(f"{owner}.{method}() does not take {name}: its update rule adds every mistake with weight 1 "
                        "and defines no weighted update, so plab has none; to weigh examples or classes, resample "
                        "the training set (e.g. sklearn.utils.resample, or repeat the examples of a class)")
    raise TypeError(f"{owner}.{method}() got an unexpected keyword argument {name!r}")


def _seed(random_state) -> int:
    """An int seed: ``random_state`` itself, or drawn from it (None: numpy's global generator)."""
    if isinstance(random_state, Integral):
        return int(random_state)
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class _EngineClassifier(ClassifierMixin, BaseEstimator):
    """What the three estimators share: data checks, training through the engine, scoring."""

    _algorithm = "perceptron"
    #: The settings of the config schema this estimator has (perceptron_lab.config.settings): their
    #: ranges are the config keys' ranges. ``kernel`` adds scikit-learn's "precomputed".
    _schema_settings: dict[str, Setting] = door(
        of="perceptron", kernel={"extra": ("precomputed",)}, degree={}, scale={}, sigma={}, fit_intercept={},
        epochs={}, rule={}, vote_weight={}, dtype={}, chunk_size={}, cache_limit_gb={})
    _parameter_constraints: dict = {**_constraints(_schema_settings), "shuffle": ["boolean"],
                                    "random_state": ["random_state"]}
    #: The run so far, for partial_fit: (rows, encoded labels, order, steps), or None once the rows
    #: are dropped (a pickle of a fitted model, a budgeted run that keeps its own compacted rows).
    _seq: tuple[Any, np.ndarray, np.ndarray, int] | None

    # ------------------------------------------------------------------ hooks of the subclasses

    def _settings(self) -> Settings:  # pragma: no cover - abstract
        """The algorithm's settings record (:mod:`perceptron_lab.engine.families`), the record a
        config's algorithm section becomes in ``plab run``."""
        raise NotImplementedError

    def _check_kernel(self) -> None:
        """Raise ValueError for a kernel the algorithm does not support."""

    def _sparse_formats(self):
        """The sparse inputs ``X`` may be: any scipy.sparse matrix or array, converted to CSR (the
        engine reads CSR rows), except a Gram matrix (``kernel="precomputed"``), which is dense."""
        return False if self.kernel == "precomputed" else "csr"

    def _sparse_refusal(self) -> str | None:
        """Why these settings' engine cannot take sparse X (None when it can): see
        :func:`perceptron_lab.engine.linear.sparse_refusal`. Such a fit raises a ValueError."""
        try:
            kernel = self._kernel()
        except (KeyError, ValueError, TypeError):
            return None  # an invalid setting: fit says so first
        return sparse_refusal(self._algorithm, kernel, float(getattr(self, "p", 2.0) or 2.0))

    # ------------------------------------------------------------------ scikit-learn protocol

    def _validate_params(self):
        """Check every parameter: the settings against the config schema's ranges (with its
        wording and did-you-mean hints), then scikit-learn's own constraints (``shuffle``,
        ``random_state``). Raises InvalidParameterError, a ValueError."""
        for name, s in self._schema_settings.items():
            problem = s.problem(getattr(self, name))
            if problem is not None:
                raise InvalidParameterError(f"The {name!r} parameter of {type(self).__name__} {problem}")
        super()._validate_params()

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "log_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = self._sparse_formats() is not False and self._sparse_refusal() is None
        tags.classifier_tags.multi_class = True
        return tags

    def fit(self, X, y, **params):
        """Train on ``(X, y)`` for ``epochs`` passes (in a random order unless ``shuffle=False``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_samples)
            Training examples, or the Gram matrix K(train, train) with ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels, of at least two classes.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            For an invalid setting, labels of mixed types, a single class, a Gram matrix that is
            not square, or data outside the range the chosen ``dtype`` can score exactly.
        TypeError
            For any other keyword argument: ``sample_weight`` and ``class_weight`` are refused
            with the reason (no update rule here defines a weighted update).
        """
        _refuse_fit_params(type(self).__name__, "fit", params)
        self._validate_params()
        self._check_kernel()
        _check_label_types(y)
        X, y = _validate_data(self, X, y, dtype=np.float64, reset=True, accept_sparse=self._sparse_formats())
        check_fit_size(type(self).__name__, X.shape[0], self.epochs)
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"kernel='precomputed' needs the square Gram matrix K(train, train), got X of shape "
                             f"{X.shape}")
        check_classification_targets(y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        self._check_two_classes()
        order, self._rule_seed = _plab_order(_seed(self.random_state), len(y_enc))
        if not self.shuffle:
            order = np.arange(len(y_enc))
        self._fit_sequence(X, y_enc, order, float(self.epochs))
        # the training sequence, which partial_fit continues (X kept by reference, not pickled): the
        # order and the number of steps, never one index per step (epochs may be large)
        self._seq = (X, y_enc, order, int(round(float(self.epochs) * len(y_enc))))
        self._seq_of_fit = True
        return self

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the base may return the instance's own dict
        if state.get("_seq_of_fit"):  # a pickle of a fitted model holds its support vectors, not its data
            state["_seq"] = None
        return state

    @available_if(lambda self: self.kernel != "precomputed")
    def partial_fit(self, X, y, classes=None, **params):
        """Continue the online run with one pass over the examples of ``(X, y)``, in the given order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New examples. Each call's examples are new examples of the stream, even when they
            repeat earlier rows.
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes_``.
        classes : array-like of shape (n_classes,), default None
            Every class that will occur; required on the first call (when the model is not fit).

        Returns
        -------
        self : object
            The estimator, fitted on the whole sequence so far.

        Raises
        ------
        ValueError
            Without ``classes`` on the first call, with labels outside ``classes_``, or for a
            model that cannot be continued (see Notes).

        Notes
        -----
        The model is the one the online run produces on the whole sequence seen so far: the steps
        of a previous ``fit`` (``epochs`` passes over its data, in its order: the fitted state),
        then each batch once, in its order. ``epochs`` and ``shuffle`` apply to ``fit`` only, so
        after ``fit(X, y)`` with ``epochs=3``, ``partial_fit(X2, y2)`` is a fourth stretch of the
        same run, over ``X2``. It is computed by replaying that sequence through the engine (a
        step that revisits an example is replayed as a row of its own): the model keeps every
        example seen (in memory, and in a pickle of a model built by partial_fit), and a call
        costs the whole sequence, not the batch alone. ``fit``'s data is kept by reference: do
        not change it in place before calling ``partial_fit``. A model unpickled after ``fit``
        keeps no training data and is not continued. Settings relative to the training set
        (``tau`` and ``theta_init="avg_sq_norm"`` of [`MarginPerceptron`][perceptron_lab.estimators.perceptron.MarginPerceptron], in units of the
        average K(x, x)) take the average over the sequence's steps so far; ``lambda_`` and
        ``alpha_bound`` depend on which examples the hypothesis holds, so a model fit with them
        over more than one pass is not continued. Not available with ``kernel="precomputed"``
        (a Gram matrix cannot be extended batch by batch).
        """
        _refuse_fit_params(type(self).__name__, "partial_fit", params)
        self._validate_params()
        self._check_kernel()
        first = not hasattr(self, "classes_")
        if not first and not self._can_continue():
            raise ValueError("partial_fit continues a run from data it still holds; this model was reloaded from a "
                             "pickle after fit (which keeps no training data): fit again, or start with "
                             "partial_fit")
        _check_label_types(y)
        X, y = _validate_data(self, X, y, dtype=np.float64, reset=first, accept_sparse=self._sparse_formats())
        seq = None if first else getattr(self, "_seq", None)
        check_fit_size(type(self).__name__, X.shape[0] + (0 if seq is None else seq[3]))
        if seq is not None:
            self._check_replay_memory(seq, X)
        check_classification_targets(y)
        if first:
            if classes is None:
                raise ValueError("classes must be passed on the first call to partial_fit")
            _check_label_types(classes, "classes")
            self.classes_ = np.unique(np.asarray(classes))
            self._check_two_classes()
            self._rule_seed = _plab_order(_seed(self.random_state), 1)[1]
        elif classes is not None and set(np.unique(np.asarray(classes)).tolist()) != set(self.classes_.tolist()):
            raise ValueError(f"classes {np.unique(classes)} differ from those of the first call, {self.classes_}")
        y_enc = _encode(y, self.classes_)
        if not first:
            self._check_continuable()
        if first:
            self._start(X)
        self._continue(X, y_enc)
        return self

    # ------------------------------------------------------------------ the run partial_fit continues

    def _can_continue(self) -> bool:
        """Whether the model holds what partial_fit needs to continue its run."""
        return getattr(self, "_seq", None) is not None

    def _check_continuable(self) -> None:
        """Raise ValueError when the fitted run cannot be continued with these settings."""

    def _start(self, X) -> None:
        """Start an empty run (the first call of partial_fit on a model not fit)."""
        self._seq = (X[:0], np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0)

    def _check_replay_memory(self, seq, X) -> None:
        """Refuse (ValueError, before any change) a replay whose rows would take more than
        ``cache_limit_gb``: partial_fit replays the run's steps so far as rows of their own."""
        X0, _, _, steps = seq
        rows = steps + X.shape[0]
        per_row = 8.0 * (X0.nnz / max(1, X0.shape[0]) * 1.5 if sp.issparse(X0) else max(X0.shape[1], X.shape[1]))
        need = rows * per_row / 1e9
        if need > float(self.cache_limit_gb):
            raise ValueError(f"partial_fit replays the run's {steps} steps so far and the {X.shape[0]} new examples "
                             f"as {rows} rows: about {need:.3g} GB, more than cache_limit_gb={self.cache_limit_gb:g}; "
                             "fit with fewer epochs before partial_fit, or raise cache_limit_gb")

    def _continue(self, X, y_enc) -> None:
        """One pass over the new examples ``(X, y_enc)`` after the run so far: the run's sequence
        with them appended, replayed through the engine as one pass (one row per step)."""
        assert self._seq is not None   # partial_fit started or continues a run
        X0, y0, order0, steps0 = self._seq
        s0 = order0[np.arange(steps0) % max(1, len(order0))]
        if sp.issparse(X0) or sp.issparse(X):
            Xs = sp.vstack([as_csr(X0[s0]), as_csr(X)], format="csr")
        else:
            Xs = np.concatenate([X0[s0], X])
        ys = np.concatenate([y0[s0], y_enc])
        self._fit_sequence(Xs, ys, np.arange(len(ys)), 1.0)
        self._seq, self._seq_of_fit = (Xs, ys, np.arange(len(ys)), len(ys)), False

    def decision_function(self, X):
        """Scores of the rule ``rule``, the ones ``predict`` takes its labels from.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_train)
            Test examples, or K(test, train) with ``kernel="precomputed"``.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            With two classes one score per example (> 0: ``classes_[1]``); else one score per
            example and class (one-vs-rest). The ``vote`` rule's scores are vote counts; the
            others are in the units of the kernel.
        """
        self._check_prediction_settings()
        S = self._scores(X)
        try:
            S = self.kernel_.from_values(S, _VALUE_POWER.get(self.rule, 1.0))
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        return S[:, 0] if S.shape[1] == 1 else S

    def predict(self, X):
        """Class labels by the rule ``rule`` (the same predictions ``plab run`` counts).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features) or (n_samples, n_train)
            Test examples, or K(test, train) with ``kernel="precomputed"``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Values of ``classes_``: the class of the largest score (the first on ties), or with
            two classes ``classes_[1]`` where the score is positive.
        """
        self._check_prediction_settings()
        S = self._scores(X)
        if S.shape[1] == 1:
            return self.classes_[(S[:, 0] > 0.0).astype(np.int64)]
        return self.classes_[np.argmax(S, axis=1)]

    # ------------------------------------------------------------------ internals

    def _check_prediction_settings(self) -> None:
        """The settings a fitted model reads when it predicts (``rule``, ``vote_weight``), which
        ``set_params`` may change after ``fit``: checked against the table as fit checks them."""
        for name in ("rule", "vote_weight"):
            problem = self._schema_settings[name].problem(getattr(self, name))
            if problem is not None:
                raise InvalidParameterError(f"The {name!r} parameter of {type(self).__name__} {problem}")

    def _check_two_classes(self):
        if len(self.classes_) < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in the data, "
                             f"got 1 class ({self.classes_[0]!r})")

    def _given_kernel(self) -> Kernel:
        """The kernel as the parameters name it."""
        if self.kernel == "precomputed":
            return Kernel("precomputed")
        return Kernel(self.kernel, int(self.degree) if self.kernel in ("poly", "poly_gaussian") else 1,
                      float(self.scale), float(self.sigma))

    def _kernel(self) -> Kernel:
        """The kernel the engine computes: the given one with ``fit_intercept``'s constant
        (:func:`perceptron_lab.engine.intercept.intercept_kernel`)."""
        return intercept_kernel(self._given_kernel(), bool(self.fit_intercept))

    def _design(self, X, fit: bool = False):
        """``X`` as the kernel of :meth:`_kernel` takes it: with ``fit_intercept``, the constant
        feature of the linear kernel, or the constant added to a precomputed kernel's values. The
        constant is in the training rows' units, a power of two near their average K(x, x)
        (:func:`perceptron_lab.engine.intercept.intercept_constant`), taken when ``fit`` (the rows
        a model is fit on) and kept for the rows it scores."""
        given = self._given_kernel()
        if fit:
            try:
                self._intercept_c = intercept_constant(given, X) if self.fit_intercept else None
            except PlabError as exc:   # rows beyond float64's range: refused as without an intercept
                raise _value_error(exc) from None
        return with_intercept(given, bool(self.fit_intercept), X, constant=getattr(self, "_intercept_c", None))[1]

    def _intercept_is_feature(self) -> bool:
        """Whether the intercept is a constant feature (the last column of the engine's rows)."""
        return needs_feature(self._given_kernel(), bool(self.fit_intercept))

    def _fit_sequence(self, X, y_enc, order, epochs: float):
        """Train through the engine on ``X`` in ``order`` for ``epochs`` passes; keep what predicting
        needs (the training log, the kernel, the support vectors)."""
        n = len(y_enc)
        if int(round(epochs * n)) < 1:
            raise ValueError(f"epochs={epochs:g} of {n} examples is less than one training step")
        dtype = np.float32 if self.dtype == "float32" else np.float64
        Y = label_matrix(y_enc, len(self.classes_))
        X_given, X = X, self._design(X, fit=True)
        try:
            kernel = self._kernel().range_safe(X, dtype)
            note = kernel.rescale_note()
            if note:
                warnings.warn(note, UserWarning, stacklevel=4)
            with threads_for(X.size):
                log = train_algorithm(self._settings(), kernel.features(X), Y, kernel, order, epochs, [epochs],
                                      dtype=dtype, chunk_size=int(self.chunk_size),
                                      cache_limit_gb=float(self.cache_limit_gb), source=type(self).__name__)
        except PlabError as exc:
            raise _value_error(exc) from None
        self.n_mistakes_ = int(log.n_updates)
        if log.hyp_w is None:
            # keep the support vectors only: the log's examples renumbered into them (an increasing
            # map, so the scoring sees the same kernel columns in the same order)
            sv, inv = distinct(log.upd_ex)
            log = dataclasses.replace(log, upd_ex=inv.astype(log.upd_ex.dtype), n_train=int(sv.size),
                                      order=np.empty(0, dtype=np.int64))
            self.support_ = sv
            self.support_vectors_ = None if self.kernel == "precomputed" else X_given[sv]
        else:
            self.support_ = np.empty(0, dtype=np.int64)
            self.support_vectors_ = np.empty((0, X_given.shape[1]))
        self.log_, self.kernel_ = log, kernel

    def _scores(self, X):
        check_is_fitted(self)
        X = _validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=self._sparse_formats())
        dtype = np.float32 if self.dtype == "float32" else np.float64
        if self.kernel == "precomputed":
            X, Xtr = self._design(X[:, self.support_]), np.empty((self.support_.size, 0))
        else:
            X, Xtr = self._design(X), self._design(self.support_vectors_)
        cp = [self.log_.checkpoint_steps.size - 1]
        try:
            with threads_for(X.size):
                if ((sp.issparse(X) or sp.issparse(Xtr)) and self.log_.hyp_w is None
                        and has_affine_form(self.kernel_) and self.rule in COMBINED_RULES):
                    # sparse rows, a linear kernel and a rule that is one vector per label: a test
                    # row costs an inner product with it, not a kernel value per support vector
                    return combined_decision_scores(self.log_, self.kernel_, self.kernel_.features(Xtr),
                                                    self.kernel_.features(X), self.rule, cp_index=cp,
                                                    vote_weight=self.vote_weight, dtype=dtype)[0]
                S = decision_scores(self.log_, self.kernel_, self.kernel_.features(Xtr), self.kernel_.features(X),
                                    cp_index=cp, vote_weight=self.vote_weight, seed=self._rule_seed, dtype=dtype)
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        # in the units of the kernel range_safe returned: decision_function converts them
        return S[0, RULE_INDEX[self.rule]]


#: How a rule's scores scale with the kernel: votes not at all, scores divided by the hypothesis'
#: norm in feature space with its square root, the others linearly (Kernel.from_values).
_VALUE_POWER = {"vote": 0.0, "last_norm": 0.5, "avg_norm": 0.5, "random_norm": 0.5}


_KERNEL_DOC = """kernel : {"linear", "poly", "gaussian", "poly_gaussian", "precomputed"}
        ``linear`` x·y; ``poly`` (1 + x·y / scale)^degree (Freund & Schapire Eq. 1); ``gaussian``
        exp(-|x - y|² / (2 sigma²)); ``poly_gaussian`` (1 + exp(-|x - y|² / (2 sigma²)))^degree
        (Gentile §4.3); ``precomputed``: X is a Gram matrix, as in scikit-learn's ``SVC``.
    degree : int, default 3
        Degree of the poly and poly_gaussian kernels.
    scale : float, default 1.0
        The scale s of the poly kernel (e.g. 255 for raw pixels, as Gentile).
    sigma : float, default 1.0
        Width of the gaussian and poly_gaussian kernels.
    fit_intercept : bool, default True
        Give the hypothesis a constant term, as scikit-learn's ``Perceptron`` does, through the
        kernel: K(x, y) + c (``perceptron_lab.engine.intercept``). With the linear kernel that is
        a constant feature a, the power of two nearest the training rows' root mean square norm
        (its weight is the intercept, updated like the others; in the data's units, so X * 2^k
        gives the same model); a Gaussian kernel becomes ``poly_gaussian`` of degree 1 (c = 1);
        the poly and poly_gaussian kernels hold a constant term of their own either way; a
        precomputed Gram matrix gets c, the power of two nearest its diagonal's mean, added. ``kernel.fit_intercept`` of a config (whose default is false, the papers').
    epochs : float, default 1.0
        Passes over the training data; a fraction trains on the first part of the sequence.
    rule : str
        Prediction rule, one of ``last``, ``last_norm``, ``avg``, ``avg_norm``, ``vote``,
        ``random``, ``random_norm``, ``longest`` (``perceptron_lab.model.predict``). Every rule
        comes from the same training pass: changing ``rule`` after ``fit`` needs no refit. The
        random rules draw one time slice per row of X (by its position, from ``random_state``), so
        their predictions on a subset of the rows may differ from those on the whole.
    vote_weight : {"survival", "correct"}
        Weights of the voted and averaged rules: Freund & Schapire's survival counts, or Khardon &
        Wachman's counts of correct predictions.
    shuffle : bool, default True
        Train in a random order drawn from ``random_state`` (else in the order given).
    random_state : int, RandomState instance or None
        Seed of the training order and of the random rule; an int s gives the order of
        permutation 0 of ``plab run`` with ``training.seed: s``.
    dtype : {"float64", "float32"}, default "float64"
        Precision of the kernel values (``training.dtype`` of a config).
    chunk_size : int, default 512
        Examples per block of the engine (``training.chunk_size`` of a config): a setting of speed
        and memory, not of the algorithm.
    cache_limit_gb : float, default 8.0
        Memory for cached kernel columns (``training.cache_limit_gb``): a setting of speed and
        memory, not of the algorithm.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_features_in_ : int
        Number of features (of training examples with ``kernel="precomputed"``).
    support_ : ndarray of shape (n_support,)
        Indices of the training examples on which some label updated.
    support_vectors_ : ndarray of shape (n_support, n_features) or None
        Those examples (None with ``kernel="precomputed"``).
    n_mistakes_ : int
        Number of updates (mistakes) over all labels.
    log_ : TrainLog
        The engine's training log (``perceptron_lab.engine.base.TrainLog``), its examples
        renumbered as positions in ``support_``.
"""


def _common_doc(rule: str, vote_weight: str) -> str:
    """The shared parameter documentation with an estimator's defaults."""
    return (_KERNEL_DOC.replace("rule : str", f'rule : str, default "{rule}"')
            .replace('vote_weight : {"survival", "correct"}',
                     f'vote_weight : {{"survival", "correct"}}, default "{vote_weight}"'))


class VotedPerceptron(_EngineClassifier):
    __doc__ = f"""The voted perceptron of Freund & Schapire (1999), Figure 1, with kernels.

    Online: each mistake adds the example to the label's hypothesis; the prediction rules of §5
    (``vote``: sum_k c_k sign(v_k·x), ``avg``, ``last``, ``random`` and their normalized forms)
    come from the one training pass. One-vs-rest over the classes.

    Parameters
    ----------
    {_common_doc("vote", "survival")}
    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0., 1.], [1., 0.], [0., 2.], [2., 0.], [1., 3.], [3., 1.]])
    >>> y = np.array([0, 1, 0, 1, 0, 1])
    >>> from perceptron_lab import VotedPerceptron
    >>> clf = VotedPerceptron(random_state=0).fit(X, y)
    >>> clf.predict([[0., 3.], [3., 0.]])
    array([0, 1])
    >>> clf.set_params(rule="avg").predict([[0., 3.], [3., 0.]])  # every rule from one pass: no refit
    array([0, 1])
    """

    def __init__(self, *, kernel="linear", degree=3, scale=1.0, sigma=1.0, fit_intercept=True, epochs=1.0,
                 rule="vote", vote_weight="survival", shuffle=True, random_state=None, dtype="float64",
                 chunk_size=DEFAULT_CHUNK, cache_limit_gb=DEFAULT_CACHE_LIMIT_GB):
        self.kernel = kernel
        self.degree = degree
        self.scale = scale
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.epochs = epochs
        self.rule = rule
        self.vote_weight = vote_weight
        self.shuffle = shuffle
        self.random_state = random_state
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.cache_limit_gb = cache_limit_gb

    def _settings(self):
        return PerceptronSettings()


class MarginPerceptron(_EngineClassifier):
    __doc__ = f"""The noise-tolerant perceptron of Khardon & Wachman (2007), Figure 2.

    An update happens when ``y (v·x - theta) <= tau`` (``tau`` in units of the average K(x, x) on
    the training set); the lambda-trick adds ``lambda_ y K(x, x)`` to the score of an example
    already in the hypothesis during training; an example updates at most ``alpha_bound`` times;
    the threshold starts at ``theta_init`` and moves by ``eta C`` per update. The ``longest``
    rule is the longest survivor.

    Parameters
    ----------
    tau : float, default 0.0
        Margin, in units of the average K(x, x) of the training examples.
    lambda_ : float, default 0.0
        The lambda-trick's lambda.
    alpha_bound : int or None, default None
        Most updates per example (None: unbounded).
    theta_init : float or "avg_sq_norm", default 0.0
        Initial threshold; ``avg_sq_norm`` is the average K(x, x) (Khardon & Wachman §3.2).
    C : float or "theta_init", default 0.0
        Threshold step per update (times ``eta``); ``theta_init`` takes its value.
    eta : float, default 1.0
        Learning rate.
    {_common_doc("last", "correct")}
    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0., 1.], [1., 0.], [0., 2.], [2., 0.], [1., 3.], [3., 1.]])
    >>> y = np.array(["a", "b", "a", "b", "a", "b"])
    >>> from perceptron_lab import MarginPerceptron
    >>> clf = MarginPerceptron(tau=0.1, random_state=0).fit(X, y)
    >>> clf.predict([[0., 3.], [3., 0.]])
    array(['a', 'b'], dtype='<U1')
    """

    _schema_settings = {**_EngineClassifier._schema_settings,
                        **door(of="perceptron", tau={}, lambda_={}, alpha_bound={}, theta_init={}, C={}, eta={})}
    _parameter_constraints = {**_EngineClassifier._parameter_constraints, **_constraints(_schema_settings)}

    def __init__(self, *, kernel="linear", degree=3, scale=1.0, sigma=1.0, fit_intercept=True, epochs=1.0, tau=0.0,
                 lambda_=0.0, alpha_bound=None, theta_init=0.0, C=0.0, eta=1.0, rule="last", vote_weight="correct",
                 shuffle=True, random_state=None, dtype="float64", chunk_size=DEFAULT_CHUNK,
                 cache_limit_gb=DEFAULT_CACHE_LIMIT_GB):
        self.kernel = kernel
        self.degree = degree
        self.scale = scale
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.epochs = epochs
        self.tau = tau
        self.lambda_ = lambda_
        self.alpha_bound = alpha_bound
        self.theta_init = theta_init
        self.C = C
        self.eta = eta
        self.rule = rule
        self.vote_weight = vote_weight
        self.shuffle = shuffle
        self.random_state = random_state
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.cache_limit_gb = cache_limit_gb

    def _check_continuable(self):
        # both count what the hypothesis holds per example, which a replay with one row per step loses
        assert self._seq is not None   # asked only of a run partial_fit can continue
        _, _, order, steps = self._seq
        bounded = self.alpha_bound is not None and float(self.alpha_bound) != float("inf")  # math.inf: unbounded
        repeats = steps > len(order) or np.unique(order).size < len(order)
        if (float(self.lambda_) > 0 or bounded) and repeats:
            raise ValueError(f"partial_fit cannot continue a run that visits examples more than once with "
                             f"lambda_={self.lambda_} or alpha_bound={self.alpha_bound}: both depend on which "
                             "examples the hypothesis already holds; fit with epochs <= 1, or with lambda_=0 and "
                             "alpha_bound=None, before partial_fit")

    def _settings(self):
        return PerceptronSettings(eta=float(self.eta), theta_init=self.theta_init, C=self.C, tau=float(self.tau),
                                  lambda_=float(self.lambda_), alpha_bound=self.alpha_bound)


class ALMA(_EngineClassifier):
    __doc__ = f"""ALMA_p(alpha; B, C), the approximate large margin algorithm of Gentile (2001), Figure 1.

    A correction happens when ``y w_k·x^ <= (1 - alpha) gamma_k`` with ``gamma_k = B sqrt(p - 1) /
    sqrt(k)`` on normalized instances ``x^``; the step is ``C / (sqrt(p - 1) sqrt(k))`` and the
    hypothesis is projected onto the unit ball. p = 2 takes any kernel (instances normalized in the
    kernel's feature space); p > 2 needs the linear kernel. ``kernel="precomputed"`` is not
    supported: normalizing needs K(x, x) of the test points.

    Parameters
    ----------
    p : float, default 2.0
        The norm p (>= 2).
    alpha : float in (0, 1], default 1.0
        Approximation parameter.
    B : float, "1/alpha", "sqrt8/alpha" or None, default None
        Margin scale; None is Gentile's 1/alpha (§4), "sqrt8/alpha" Theorem 3's sqrt(8)/alpha.
    C : float, default sqrt(2)
        Step scale.
    {_common_doc("last", "survival")}
    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0., 1.], [1., 0.], [0., 2.], [2., 0.], [1., 3.], [3., 1.]])
    >>> y = np.array([0, 1, 0, 1, 0, 1])
    >>> from perceptron_lab import ALMA
    >>> ALMA(alpha=0.9, random_state=0).fit(X, y).predict([[0., 3.], [3., 0.]])
    array([0, 1])
    """

    _algorithm = "alma"
    _schema_settings = {**_EngineClassifier._schema_settings, **door(of="alma", p={}, alpha={}, B={}, C={})}
    _parameter_constraints = {**_EngineClassifier._parameter_constraints, **_constraints(_schema_settings)}

    def __init__(self, *, p=2.0, alpha=1.0, B=None, C=DEFAULT_ALMA_C, kernel="linear", degree=3, scale=1.0,
                 sigma=1.0, fit_intercept=True, epochs=1.0, rule="last", vote_weight="survival", shuffle=True,
                 random_state=None, dtype="float64", chunk_size=DEFAULT_CHUNK, cache_limit_gb=DEFAULT_CACHE_LIMIT_GB):
        self.p = p
        self.alpha = alpha
        self.B = B
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.scale = scale
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.epochs = epochs
        self.rule = rule
        self.vote_weight = vote_weight
        self.shuffle = shuffle
        self.random_state = random_state
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.cache_limit_gb = cache_limit_gb

    def _check_kernel(self):
        if self.kernel == "precomputed":
            raise ValueError("ALMA normalizes instances in the kernel's feature space, which needs K(x, x) of the "
                             "test points: kernel='precomputed' is not supported; pass the features and a named kernel")
        if float(self.p) != 2.0 and self.kernel != "linear":
            raise ValueError(f"ALMA with p = {self.p:g} > 2 needs kernel='linear', got kernel={self.kernel!r}")

    def _settings(self):
        return AlmaSettings(alpha=float(self.alpha), B=self.B, C=float(self.C), p=float(self.p))

