"""A scikit-learn estimator for the kernel perceptrons on a memory budget, and NORMA.

:class:`BudgetPerceptron` runs the Stoptron, the Randomized Budget Perceptron, the Forgetron,
the Projectron, Projectron++ and NORMA (:mod:`perceptron_lab.engine.budget`) from Python, on the
engine and prediction code of ``plab run``.

Design: one estimator with ``algorithm=...``, not one class per algorithm. The six algorithms are
settings of one engine (one jitted step, one state, one training log and one scoring function),
they share every parameter but three (``eta`` for the Projectrons and NORMA; ``lambda_``, ``rho``
and ``schedule`` for NORMA), and a config names them the same way (``algorithm.name``). One class
keeps a single documented parameter table and lets a grid search choose the algorithm
(``GridSearchCV(BudgetPerceptron(), {"algorithm": [...], "budget": [...]})``), as a config's
``evaluation.grid`` does; six classes would repeat the same table six times.

``fit`` is a ``plab run`` unit: the kernel is scaled to ``max_i K(x_i, x_i) = 1`` on the training
rows (:func:`~perceptron_lab.engine.budget.unit_diag_kernel`), the training order and the RBP's
random removals come from ``random_state`` as from ``training.seed`` (permutation 0 of a holdout
run), :func:`~perceptron_lab.engine.budget.train_budget` trains, and
:func:`~perceptron_lab.engine.budget.budget_scores` scores, so that the predictions are those
behind ``plab run``'s error rates. ``partial_fit`` continues the same run on new examples from the
engine's state (the same jitted step, no replay): it costs the new examples only. The model keeps
the support sets and the features of every example that was ever a support vector (the averaged
and voted rules need them), not the training set.

Example::

    >>> from perceptron_lab import BudgetPerceptron
    >>> clf = BudgetPerceptron(algorithm="forgetron", budget=100, kernel="gaussian", sigma=2.0).fit(X, y)  # doctest: +SKIP
    >>> clf.set_params(rule="avg").score(X_test, y_test)                                          # doctest: +SKIP
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from perceptron_lab.config.settings import door
from perceptron_lab.constants import (BUDGET_ALGORITHMS, BUDGET_RULES, DEFAULT_CACHE_LIMIT_GB, DEFAULT_CHUNK,
                        DEFAULT_NORMA_ETA, DEFAULT_NORMA_RHO, DEFAULT_PROJECTRON_ETA)
from perceptron_lab.engine import label_matrix
from perceptron_lab.engine.budget import BudgetLog, BudgetParams, BudgetRun, budget_scores, train_budget, unit_diag_kernel
from perceptron_lab.engine.families import BudgetSettings, default_eta, never_updates
from perceptron_lab.errors import PlabError
from perceptron_lab.estimators.perceptron import _constraints, _EngineClassifier, _validate_data, _value_error
from perceptron_lab.engine.kernels import Kernel, kernel_diag
from perceptron_lab.engine.threads import threads_for

__all__ = ["BudgetPerceptron"]

_NO_LIMIT = int(np.iinfo(np.int64).max)


class BudgetPerceptron(_EngineClassifier):
    __doc__ = f"""Kernel perceptrons on a memory budget, and NORMA (``perceptron_lab.engine.budget``).

    One-vs-rest: every label keeps at most ``budget`` support vectors with real coefficients; the
    hypothesis is ``f(x) = sum_j coef_j K(x_j, x)``. The algorithms:

    * ``stoptron``: the perceptron until the support set is full, then no update;
    * ``rbp``: the Randomized Budget Perceptron (Cavallanti, Cesa-Bianchi & Gentile 2007), which
      discards a random support vector on a mistake with a full support set;
    * ``forgetron``: the self-tuned Forgetron (Dekel, Shalev-Shwartz & Singer 2008, Figure 3),
      which shrinks every weight and removes the oldest support vector;
    * ``projectron`` and ``projectron++`` (Orabona, Keshet & Caputo 2009, Figures 1 and 2), which
      project an update onto the span of the support set when it is within ``eta`` of it;
    * ``norma`` (Kivinen, Smola & Williamson 2004, §III): a decay ``1 - eta_t lambda`` every step
      and an update on ``y f(x) < rho``, truncated to the ``budget`` most recent terms.

    Parameters
    ----------
    algorithm : {{"stoptron", "rbp", "forgetron", "projectron", "projectron++", "norma"}}, default "forgetron"
        The budgeted algorithm (``algorithm.name`` of a config).
    budget : int or None, default 100
        Most support vectors per label (NORMA: the truncation tau); None: no limit.
    eta : float or None, default None
        The Projectrons' threshold on the distance from the span of the support set, or NORMA's
        learning rate; None: the config defaults ({DEFAULT_PROJECTRON_ETA:g} and {DEFAULT_NORMA_ETA:g}).
        Unused by the others.
    lambda_ : float, default 0.0
        NORMA's regularization: every step ``f <- (1 - eta_t lambda) f``.
    rho : float, default {DEFAULT_NORMA_RHO:g}
        NORMA's margin: an update when ``y f(x) < rho``.
    schedule : {{"constant", "sqrt"}}, default "constant"
        NORMA's learning rate: ``eta_t = eta``, or ``eta / sqrt(t)``.
    fit_intercept : bool, default True
        A constant term through the kernel, K(x, y) + 1, as in
        [`VotedPerceptron`][perceptron_lab.estimators.perceptron.VotedPerceptron]
        (``perceptron_lab.engine.intercept``): the constant feature 1 with the linear kernel,
        ``poly_gaussian`` of degree 1 for a Gaussian kernel (so K(x, x) = 2 there); nothing added to
        the poly kernels, which hold a constant term of their own.
    kernel : {{"linear", "poly", "gaussian", "poly_gaussian"}}, default "linear"
        ``linear`` x·y; ``poly`` (1 + x·y / scale)^degree; ``gaussian`` exp(-|x - y|² / (2 sigma²));
        ``poly_gaussian`` (1 + exp(-|x - y|² / (2 sigma²)))^degree. It is scaled to
        ``max_i K(x_i, x_i) = 1`` on the rows of ``fit`` (or of the first ``partial_fit``), as
        ``plab run`` scales it for these algorithms (their thresholds are stated for
        ``K(x, x) <= 1``), and kept for later calls; the Gaussian kernels need no scaling.
        ``precomputed`` is not supported: the engine computes kernel values against the support
        set as it changes.
    degree : int, default 3
        Degree of the poly and poly_gaussian kernels.
    scale : float, default 1.0
        The scale s of the poly kernel.
    sigma : float, default 1.0
        Width of the gaussian and poly_gaussian kernels.
    epochs : float, default 1.0
        Passes over the training data of ``fit``; a fraction trains on the first part of the
        sequence.
    rule : {{"last", "avg", "vote"}}, default "last"
        Prediction rule: ``last`` the current hypothesis; ``avg`` the sum of the hypotheses after
        each step (not budgeted: its support is every example ever inserted); ``vote`` the sign of
        each step's hypothesis, summed (Freund & Schapire's survival weighting). Every rule comes
        from the same training run: changing ``rule`` needs no refit.
    vote_weight : str, default "survival"
        Unused (the budgeted rules weigh by survival); kept so that the estimators share settings.
    shuffle : bool, default True
        Train in a random order drawn from ``random_state`` (else in the order given).
    random_state : int, RandomState instance or None
        Seed of the training order and of the RBP's random removals; an int s gives those of
        permutation 0 of a holdout ``plab run`` with ``training.seed: s``.
    dtype : {{"float64", "float32"}}, default "float64"
        Unused: the budgeted engine computes kernel values in float64.
    chunk_size : int, default 512
        Examples per kernel block (``training.chunk_size``): speed and memory, not results.
    cache_limit_gb : float, default 8.0
        Most memory for the Forgetron's and the Projectrons' budget x budget matrices
        (``training.cache_limit_gb``).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_features_in_ : int
        Number of features.
    support_ : ndarray of shape (n_support,)
        Positions (in the examples seen: fit's rows, then each partial_fit batch's) of the
        examples in some label's current support set.
    support_vectors_ : ndarray of shape (n_support, n_features)
        Those examples.
    n_mistakes_ : int
        Prediction mistakes (``y f(x) <= 0``) over all labels.
    n_updates_ : int
        Insertions, projections and margin updates over all labels.
    log_ : BudgetLog
        The engine's log of the run so far (``perceptron_lab.engine.budget.BudgetLog``, one
        checkpoint: now), its hypotheses over the rows of ``support_vectors_`` and of the other
        examples the averaged and voted rules need.
    kernel_ : Kernel
        The kernel as scaled.

    Notes
    -----
    Scores (``decision_function``) are in the units of the scaled kernel. The model keeps the
    features of the examples that some rule refers to: every example ever inserted in a support
    set, not the whole training set. So that any rule can be chosen after ``fit``, the run records
    every change of the hypotheses that the voted rule replays (``record_changes`` of
    ``perceptron_lab.engine.budget.train_budget``, which ``plab run`` turns on only when
    ``prediction.rules`` lists vote): one entry per insertion and removal, and one per support
    vector for each projection of the Projectrons.

    Examples
    --------
    >>> import numpy as np
    >>> from perceptron_lab import BudgetPerceptron
    >>> X = np.array([[0., 1.], [1., 0.], [0., 2.], [2., 0.], [1., 3.], [3., 1.]])
    >>> y = np.array([0, 1, 0, 1, 0, 1])
    >>> clf = BudgetPerceptron(algorithm="rbp", budget=2, random_state=0).fit(X, y)
    >>> clf.predict([[0., 3.], [3., 0.]])
    array([0, 1])
    >>> len(clf.support_vectors_) <= 2
    True
    """

    #: The config schema's settings (perceptron_lab.config.settings) with the budgeted algorithms'
    #: choices: their kernels (no "precomputed") and rules; ``eta=None`` is the config's default.
    _schema_settings = {**_EngineClassifier._schema_settings, **door(
        of="norma", algorithm={"options": BUDGET_ALGORITHMS}, budget={}, eta={"none": True}, lambda_={}, rho={},
        schedule={}, kernel={}, rule={"options": BUDGET_RULES})}
    _parameter_constraints = {**_EngineClassifier._parameter_constraints, **_constraints(_schema_settings)}

    def __init__(self, *, algorithm="forgetron", budget=100, eta=None, lambda_=0.0, rho=DEFAULT_NORMA_RHO,
                 schedule="constant", fit_intercept=True, kernel="linear", degree=3, scale=1.0, sigma=1.0, epochs=1.0,
                 rule="last", vote_weight="survival", shuffle=True, random_state=None, dtype="float64",
                 chunk_size=DEFAULT_CHUNK, cache_limit_gb=DEFAULT_CACHE_LIMIT_GB):
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
        self.epochs = epochs
        self.rule = rule
        self.vote_weight = vote_weight
        self.shuffle = shuffle
        self.random_state = random_state
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.cache_limit_gb = cache_limit_gb

    def fit(self, X, y, **params):
        """Train on ``(X, y)`` for ``epochs`` passes, as a ``plab run`` unit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training examples.
        y : array-like of shape (n_samples,)
            Their class labels (at least two classes).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        super().fit(X, y, **params)
        self._seq = None  # the run keeps the rows it needs (compacted): no reference to X
        return self

    def partial_fit(self, X, y, classes=None, **params):
        """Continue the run with one pass over the examples of ``(X, y)``, in the given order.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New examples (new examples of the stream even when they repeat earlier rows).
        y : array-like of shape (n_samples,)
            Their labels, all in ``classes_``.
        classes : array-like of shape (n_classes,), default None
            Every class that will occur; required on the first call (when the model is not fit).

        Returns
        -------
        self : object
            The fitted estimator.

        Notes
        -----
        The run goes on from its state, with the engine's step: after ``fit`` with ``epochs=3``,
        ``partial_fit(X2, y2)`` is a fourth stretch of the same run, over ``X2``, and after
        ``fit(X1)`` with one pass in order (``shuffle=False``) it gives the model of one ``fit`` on
        ``X1`` then ``X2``. The RBP's random removals go on from the same generator; NORMA's
        ``eta_t`` counts every step of the run. The kernel keeps the scaling of the first call.
        A call costs the new examples only, and a pickled model can be continued.
        """
        return super().partial_fit(X, y, classes=classes, **params)

    # ------------------------------------------------------------------ hooks of _EngineClassifier

    def _sparse_formats(self):
        """False: the budgeted engines read dense rows (their support sets are dense row blocks), so
        a sparse X is refused by the data check with a message that names the fix."""
        return False

    def _params(self, seed) -> BudgetParams:
        params = BudgetParams(algorithm=self.algorithm, budget=_NO_LIMIT if self.budget is None else int(self.budget),
                              eta=default_eta(self.algorithm) if self.eta is None else float(self.eta),
                              lam=float(self.lambda_), rho=float(self.rho), schedule=self.schedule, seed=seed)
        try:
            params.validate(1)
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        return params

    def _budget_kernel(self, X) -> Kernel:
        """The kernel of the estimator checked and scaled as ``plab run`` does for a budgeted run
        (:func:`perceptron_lab.run.units.unit_kernel`): the range of the training rows in both
        directions (:meth:`~perceptron_lab.engine.kernels.Kernel.range_safe`; a poly or Gaussian kernel
        on features beyond float64's range works on them multiplied by a power of two, with the
        same kernel values, see :meth:`~perceptron_lab.engine.kernels.Kernel.features`), then
        ``max_i K(x_i, x_i) = 1``."""
        try:
            kernel = self._kernel().range_safe(X, np.float64, rescale_values=False, unit_diag=True)
        except PlabError as exc:
            raise _value_error(exc) from None
        note = kernel.rescale_note()
        if note:
            warnings.warn(note, UserWarning, stacklevel=5)
        kernel = unit_diag_kernel(kernel, kernel.features(X))
        if not np.all(np.isfinite(kernel_diag(kernel, kernel.features(X)))):
            raise ValueError(f"K(x, x) overflows float64 for {kernel.describe()}; use a larger scale or a "
                             "smaller degree")
        return kernel

    def _warn_if_no_update(self, kernel: Kernel, X) -> None:
        """A UserWarning when these settings can make no update on rows ``X`` (features as the
        kernel takes them): :func:`perceptron_lab.engine.families.never_updates`."""
        if not len(X):
            return
        settings = BudgetSettings(name=self.algorithm, budget=self.budget, eta=self.eta, rho=self.rho)
        why = never_updates(settings, float(np.max(kernel_diag(kernel, X))), prefix="")
        if why:
            warnings.warn(f"{type(self).__name__}: {why}", UserWarning, stacklevel=4)

    def _features(self, kernel: Kernel, X):
        """``X`` as the run's kernel takes it (:meth:`Kernel.features`), refused when the power of
        two chosen on the first rows carries a new batch or test set out of float64's range."""
        Xf = kernel.features(X)
        with np.errstate(over="ignore", under="ignore"):
            sq = np.einsum("ij,ij->i", Xf, Xf)
        lost = (sq == 0.0) & np.any(X != 0.0, axis=1)
        if not np.all(np.isfinite(sq)) or lost.any():
            raise ValueError("these examples are so far from the scale of the training examples that their "
                             "inner products leave float64's range; scale them like the training examples "
                             "(e.g. sklearn.preprocessing.Normalizer in a Pipeline)")
        return Xf

    def _fit_sequence(self, X, y_enc, order, epochs: float):
        """``plab run``'s training: train_budget on ``X`` in ``order`` for ``epochs`` passes."""
        n = len(y_enc)
        if int(round(epochs * n)) < 1:
            raise ValueError(f"epochs={epochs:g} of {n} examples is less than one training step")
        X = self._design(X, fit=True)
        kernel = self._budget_kernel(X)
        X = kernel.features(X)
        self._warn_if_no_update(kernel, X)
        params = self._params(self._rule_seed)
        Y = label_matrix(y_enc, len(self.classes_))
        try:
            run = BudgetRun(X, Y, kernel, params, record=True, memory_limit_gb=float(self.cache_limit_gb),
                            capacity=len(y_enc))
            with threads_for(X.size):
                train_budget(X, Y, kernel, params, order, epochs, [epochs], chunk_size=int(self.chunk_size), run=run)
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        self._run = run
        self._run.compact()
        self._set_log(self._run.log())

    def _start(self, X) -> None:
        """An empty run (the first call of partial_fit): the kernel is scaled on its first batch."""
        X = self._design(X, fit=True)   # the constant, as the kernel's scaling, from the first batch
        kernel = self._budget_kernel(X)
        self._warn_if_no_update(kernel, kernel.features(X))
        self._run = BudgetRun(kernel.features(X[:0]), np.zeros((0, self._n_labels()), np.int8), kernel,
                              self._params(self._rule_seed), record=True, memory_limit_gb=float(self.cache_limit_gb))

    def _continue(self, X, y_enc) -> None:
        """One pass over the new examples, in order, from the run's state."""
        run = self._run
        idx = run.add_examples(self._features(run.kernel, self._design(X)), label_matrix(y_enc, len(self.classes_)))
        with threads_for(run.X.size):
            run.steps(idx, int(self.chunk_size))
        run.compact()
        self._set_log(run.log())

    def _can_continue(self) -> bool:
        return getattr(self, "_run", None) is not None

    def _set_log(self, log: BudgetLog) -> None:
        self.log_, self.kernel_ = log, self._run.kernel
        self.n_mistakes_ = int(log.mistakes_cp[-1].sum())
        self.n_updates_ = int(log.n_updates)
        sv = np.unique(np.concatenate([e for e, _ in log.last[-1]])) if log.last[-1] else np.empty(0, np.int64)
        self.support_ = self._run.pos[sv]
        sv_rows = self._run.X[sv][:, :-1] if self._intercept_is_feature() else self._run.X[sv]
        self.support_vectors_ = np.ldexp(sv_rows, -self._run.kernel.feature_exp)  # in X's units

    def _n_labels(self) -> int:
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    def _scores(self, X):
        check_is_fitted(self)
        X = _validate_data(self, X, dtype=np.float64, reset=False)
        try:
            with threads_for(X.size):
                S = budget_scores(self.log_, self.kernel_, self._run.X, self._features(self.kernel_, self._design(X)),
                                  self.rule)
        except PlabError as exc:
            raise ValueError(str(exc)) from None
        return S

    def __getstate__(self):
        state = dict(self.__dict__)  # the run's state is the model: a pickle can be continued
        state.pop("_seq", None)  # fit's data by reference; the run holds what it needs
        return state
