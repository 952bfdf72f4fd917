"""The config schema: every key with its check, default and description (:data:`SCHEMA`). The checks
are in :mod:`perceptron_lab.config.checks`; the validator that walks a config through this table,
and the public API, are in :mod:`perceptron_lab.config.load`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable


from perceptron_lab import constants as C



SECTIONS = ("dataset", "kernel", "algorithm", "training", "prediction", "evaluation", "output")
#: A config file (or a file it extends) larger than this is refused before it is read.
MAX_CONFIG_BYTES = 1 << 20
_TOP_KEYS = ("name", "description", "paper", "extends")


from perceptron_lab.config.checks import PACKAGE_CONFIG_DIR  # noqa: F401  (re-exported)
from perceptron_lab.config.checks import (_FILE_STEM, _NULL, _REQUIRED, _Check, _Choice, _ColumnName, _DatasetName, _FilePath, _Flag,
                            _FloatFormat, _Grid, _ListOf, _Literal, _Number, _PaperRef, _ParamValues, _Search, _Text,
                            _Union)


# =========================================================================== the schema table


@dataclass(frozen=True)
class Param:
    """One config key: its check, default and documentation.

    ``when = (selector, values)`` makes the key apply only while the section's ``selector`` key
    has one of ``values``. Outside that, the key takes ``neutral`` and may be given only with
    that value; otherwise ``off`` (a format string) says why it does not fit.
    """

    path: str
    check: _Check
    default: Any
    doc: str
    attr: str = ""
    when: tuple[str, tuple[str, ...]] | None = None
    neutral: Any = None
    off: str = ""
    grid: bool = True
    #: Listed by ``to_dict`` (and so in the results hash) only when it differs from the default:
    #: for keys added after results were recorded, so that configs not using them keep their hash.
    omit_default: bool = False

    # computed once per key: validating a config reads them millions of times on a large grid
    @cached_property
    def section(self) -> str:
        return self.path.split(".", 1)[0] if "." in self.path else ""

    @cached_property
    def key(self) -> str:
        return self.path.split(".", 1)[-1]

    def applies(self, lookup: Callable[[str], Any]) -> bool:
        """Whether the key is in effect, ``lookup(key)`` giving the section's selector value."""
        return self.when is None or lookup(self.when[0]) in self.when[1]


def _P(path, check, default, doc, **kw) -> Param:
    kw.setdefault("attr", path.rsplit(".", 1)[-1])
    return Param(path, check, default, doc, **kw)


_POSITIVE = _Number(lo=0, lo_open=True)
_NONNEG = _Number(lo=0)
_INT_GE1 = _Number(integer=True, lo=1)
_INT_GE0 = _Number(integer=True, lo=0)
_INT_GE2 = _Number(integer=True, lo=2)

_IS_ALMA = "{path} is an ALMA parameter; set algorithm.name: alma to use it"
#: A key of the perceptron (and of some budgeted algorithms) given with an algorithm that has no such
#: key: ``{users}`` lists the algorithms that have it, ``{sel_name}`` the one chosen (:func:`off_text`).
_IS_PERCEPTRON = "{path} is {users}; {sel_name} does not use it"
#: How messages name each algorithm (``algorithm.name``).
ALGORITHM_TITLES = {"perceptron": "the perceptron", "alma": "ALMA", "stoptron": "the Stoptron", "rbp": "the RBP",
                    "forgetron": "the Forgetron", "projectron": "the Projectron",
                    "projectron++": "the Projectron++", "norma": "NORMA"}
_NOT_BUDGETED = ("{path}{shown} with {sel_path} = {sel}: only the budgeted algorithms (" + ", ".join(C.BUDGET_ALGORITHMS)
                 + ") have a budget")


def _perceptron(path, check, default, doc, off=_IS_PERCEPTRON, **kw):
    return _P(path, check, default, doc, when=("name", ("perceptron",)), off=off, **kw)


def _alma(path, check, default, doc, off=_IS_ALMA, **kw):
    return _P(path, check, default, doc, when=("name", ("alma",)), off=off, **kw)


#: Every config key, in the order keys are validated and written out.
SCHEMA: tuple[Param, ...] = (
    _P("name", _Text(nonempty=True, pattern=r"(?!\.\.?$)[^/\\\x00]*",
                     noun="a non-empty name without '/', '\\' or NUL that is not '.' or '..'"),
       _FILE_STEM, "Run name; outputs go to runs/<name>. Defaults to the config file's stem "
       "and is never inherited through extends.", grid=False),
    _P("description", _Text(), "", "Free text shown in reports.", grid=False),
    _P("paper", _PaperRef(), None, "The paper table the run reproduces, as <paper>/<table> (e.g. kw2007/table5): "
       "its outputs are then also written in the paper's layout and scored against it. Runs without it "
       "are never scored against a paper. Never inherited through extends.", grid=False),
    # ---------------------------------------------------------------- dataset
    _P("dataset.name", _DatasetName(), None,
       "A registered dataset, or a synthetic one: " + ", ".join(C.DATASET_SYNTHETIC) + ". Required "
       "unless dataset.path names a file of your own.", omit_default=True),
    _P("dataset.path", _FilePath(), None,
       "A data file of your own instead of dataset.name: CSV/TSV with a header line, LIBSVM/SVMlight, "
       "or .npz with arrays X and y. Relative paths are relative to the config file.",
       grid=False, omit_default=True),
    _P("dataset.test_path", _FilePath(), None,
       "The test file of dataset.path, in the same format with the same columns; without it, evaluate "
       "by cross-validation (evaluation.mode: kfold).", grid=False, omit_default=True),
    _P("dataset.format", _Choice(C.USER_FORMATS), "auto",
       "Format of dataset.path: csv, tsv, libsvm or npz; auto reads the extension ("
       + ", ".join(C.USER_EXTENSIONS) + ").", grid=False, omit_default=True),
    _P("dataset.label", _ColumnName(), None,
       "The label column of a CSV/TSV file (its header name). Required for CSV/TSV.",
       grid=False, omit_default=True),
    _P("dataset.categorical", _ListOf(_ColumnName(), "a list of column names", unique=True), (),
       "CSV/TSV columns read as categories even if their values are numbers (e.g. codes); a column "
       "with no numeric value is categorical anyway. Each is expanded to one 0/1 indicator per value "
       "seen in the training file.", grid=False, omit_default=True),
    _P("dataset.train_size", _Union(_INT_GE1, _NULL), None,
       "Use only the first N training examples; null uses all."),
    _P("dataset.test_size", _Union(_INT_GE1, _NULL), None,
       "Use only the first N test examples; null uses all."),
    _P("dataset.preprocess", _Choice(C.PREPROCESS), "none",
       "Feature preprocessing, fitted on the training split."),
    _P("dataset.params", _ParamValues(), {},
       "Generator arguments of a synthetic dataset (e.g. f, margin, noise, seed).", grid=False),
    _P("dataset.merge_splits", _Flag(), False,
       "Append the test split to the training split, so that cross-validation runs over the whole "
       "data set (e.g. Khardon & Wachman's 10-fold CV over all 9298 USPS examples).", omit_default=True),
    _P("dataset.instance_name", _Choice(C.INSTANCE_NAME_READINGS), C.INSTANCE_NAME_READINGS[0],
       "How the instance name that UCI's promoters.names lists as attribute 2 enters the features: drop "
       "leaves it out; nominal expands it like any nominal attribute (Khardon & Wachman 2007, section 3.1), "
       "one 0/1 indicator per name, and every name is different, so each example gets an indicator of its "
       "own.", when=("name", C.DATASETS_WITH_INSTANCE_NAME), neutral=C.INSTANCE_NAME_READINGS[0],
       off="{path}{shown} with {sel_path} = {sel}: only " + ", ".join(C.DATASETS_WITH_INSTANCE_NAME)
       + " has an instance name among its attributes", omit_default=True),
    # ---------------------------------------------------------------- kernel
    _P("kernel.type", _Choice(C.KERNELS), "linear",
       "linear: x·y; poly: (1 + x·y/scale)^degree; gaussian: exp(-|x-y|²/(2 sigma²)); "
       "poly_gaussian: (1 + exp(-|x-y|²/(2 sigma²)))^degree."),
    _P("kernel.degree", _INT_GE1, 1, "Degree of the poly and poly_gaussian kernels.",
       when=("type", C.KERNELS_WITH_DEGREE), neutral=1,
       off="{path}{shown} with {sel_path} = {sel}: only the poly and poly_gaussian kernels have a degree"),
    _P("kernel.scale", _POSITIVE, 1.0,
       "Scale s of the poly kernel (1 + x·y/s)^d, e.g. 255 for raw pixels (Gentile 2001)."),
    _P("kernel.sigma", _POSITIVE, _REQUIRED, "Width of the gaussian and poly_gaussian kernels.",
       when=("type", C.KERNELS_WITH_SIGMA), neutral=None,
       off="{path}{shown} with {sel_path} = {sel}: only the gaussian and poly_gaussian kernels have a width"),
    _P("kernel.fit_intercept", _Flag(), False,
       "Give the hypothesis a constant term (an intercept) through the kernel: K(x, y) + c, that is a "
       "constant feature with the linear kernel (as scikit-learn's Perceptron(fit_intercept=True)), the power "
       "of two nearest the training rows' root mean square norm, and the poly_gaussian kernel of degree 1 "
       "(K + 1) in place of the gaussian one. The poly and poly_gaussian kernels "
       "hold a constant term of their own (the 1 of (1 + ...)^d) either way. Default false, the papers' "
       "protocol and the meaning of every run recorded before this key existed; the Python estimators "
       "default to fit_intercept=True, as scikit-learn does.", omit_default=True),
    # ---------------------------------------------------------------- algorithm
    _P("algorithm.name", _Choice(C.ALGORITHMS), "perceptron",
       "perceptron (Freund & Schapire 1999; Khardon & Wachman 2007), alma (Gentile 2001), or a kernel "
       "perceptron on a memory budget: stoptron (stops updating when the budget is full), rbp (randomized "
       "budget perceptron, Cavallanti, Cesa-Bianchi & Gentile 2007), forgetron (self-tuned, Dekel, "
       "Shalev-Shwartz & Singer 2008), projectron and projectron++ (Orabona, Keshet & Caputo 2009), "
       "norma (Kivinen, Smola & Williamson 2004); the budgeted ones predict with the rules last, avg and vote."),
    _perceptron("algorithm.eta", _POSITIVE, C.DEFAULT_ETA, "Learning rate."),
    _perceptron("algorithm.theta_init", _Union(_Number(), _Literal(C.THETA_AVG_SQ_NORM)), 0.0,
                "Initial margin threshold; 'avg_sq_norm' is the average <x_i, x_i>."),
    _perceptron("algorithm.C", _Union(_NONNEG, _Literal(C.C_SAME_AS_THETA)), 0.0,
                "Threshold increment per mistake; 'theta_init' means the same value as theta_init."),
    _perceptron("algorithm.tau", _NONNEG, 0.0, "Margin parameter tau."),
    _perceptron("algorithm.lambda", _NONNEG, 0.0, "Regularisation lambda.", attr="lambda_"),
    _perceptron("algorithm.lambda_term", _Choice(C.LAMBDA_TERMS), C.LAMBDA_TERMS[0],
                "How the lambda-trick enters a training example's score y (SUM - theta): indicator adds "
                "y lambda K(x, x) once x has caused an update (Khardon & Wachman 2007, eq. (1) as printed); "
                "diagonal adds lambda K(x, x) to the kernel's diagonal, so the term is y eta alpha_x lambda "
                "K(x, x), growing with the updates alpha_x on x (the dual-form convention of Kowalczyk et al. "
                "2001 and Li et al. 2002). Used only with lambda > 0.", omit_default=True),
    _perceptron("algorithm.alpha_bound", _Union(_INT_GE1, _NULL, _Literal(C.ALPHA_BOUND_UNBOUNDED, math.inf,
                                                                          result=None, noun="'inf'")),
                None, "Largest dual coefficient alpha_i; null or 'inf' means unbounded.",
                off="{path} is a perceptron parameter; ALMA's margin parameter is algorithm.alpha"),
    _perceptron("algorithm.form", _Choice(C.FORMS), "auto",
                "primal keeps a weight vector (linear kernel only); dual keeps the mistakes."),
    _alma("algorithm.alpha", _Number(lo=0, lo_open=True, hi=1), C.DEFAULT_ALMA_ALPHA,
          "ALMA's margin parameter alpha.",
          off="{path} is an ALMA parameter; for the perceptron's mistake bound use alpha_bound"),
    _alma("algorithm.B", _Union(_POSITIVE, _Literal(C.ALMA_B_THEOREM3), _Literal(C.ALMA_B_STATED, result=None),
                                _NULL), None,
          f"ALMA's B; null or '{C.ALMA_B_STATED}' means 1/alpha (Gentile 2001, §4), '{C.ALMA_B_THEOREM3}' "
          "Theorem 3's sqrt(8)/alpha; both follow alpha (e.g. each value of a grid over algorithm.alpha)."),
    _alma("algorithm.C", _POSITIVE, C.DEFAULT_ALMA_C, "ALMA's C (default sqrt 2)."),
    _alma("algorithm.p", _Number(lo=2), C.DEFAULT_ALMA_P, "The norm p of ALMA_p."),
    _P("algorithm.budget", _Union(_INT_GE1, _NULL), None,
       "Most support vectors per label (NORMA: the truncation tau, the most recent terms kept); null: "
       "no limit (the number of training examples).", when=("name", C.BUDGET_ALGORITHMS), off=_NOT_BUDGETED),
    _P("algorithm.eta", _POSITIVE, C.DEFAULT_PROJECTRON_ETA,
       "Projectron/Projectron++: a mistake adds a support vector only when the new example's distance "
       "from the span of the support set (in feature space) exceeds eta; otherwise the update is projected. "
       "The distance itself (DOGMA's eta is on its square: its default 0.1 is 0.316 here). At eta >= "
       "sqrt(max K(x, x)) (1 for a Gaussian or a scaled poly kernel) no support vector is ever added and "
       "the run predicts one class: plab run warns. Projectron++'s margin update needs the distance below "
       "eta (1 - y f(x)); plab run notes when none happened.",
       when=("name", ("projectron", "projectron++")), off=_IS_PERCEPTRON, omit_default=True),
    _P("algorithm.eta", _POSITIVE, C.DEFAULT_NORMA_ETA,
       "NORMA's learning rate eta (eta_t = eta, or eta / sqrt(t) with algorithm.schedule: sqrt).",
       when=("name", ("norma",)), off=_IS_PERCEPTRON, omit_default=True),
    _P("algorithm.lambda", _NONNEG, 0.0, "NORMA's regularization lambda: every step f <- (1 - eta_t lambda) f; "
       "eta * lambda must be below 1.", when=("name", ("norma",)), attr="lambda_", off=_IS_PERCEPTRON, omit_default=True),
    _P("algorithm.rho", _NONNEG, C.DEFAULT_NORMA_RHO,
       "NORMA's margin rho: an update when y f(x) < rho (the loss max(0, rho - y f(x))).",
       when=("name", ("norma",)), off="{path} is a NORMA parameter; set algorithm.name: norma to use it"),
    _P("algorithm.schedule", _Choice(C.NORMA_SCHEDULES), "constant",
       "NORMA's learning-rate schedule: constant (eta_t = eta) or sqrt (eta_t = eta / sqrt(t)).",
       when=("name", ("norma",)), off="{path} is a NORMA parameter; set algorithm.name: norma to use it"),
    # ---------------------------------------------------------------- training
    _P("training.epochs", _POSITIVE, C.DEFAULT_EPOCHS, "Passes over the training data; may be fractional."),
    _P("training.checkpoints", _ListOf(_POSITIVE, "a list of positive numbers"), (),
       "Epoch positions where results are recorded; epochs is always one of them.", grid=False),
    _P("training.curve_every", _Union(_POSITIVE, _NULL), None,
       "Record test error every this many epochs (e.g. 0.1); null records none."),
    _P("training.permutations", _INT_GE1, 1, "Number of random orderings of the training data."),
    _P("training.seed", _INT_GE0, 0, "Seed of the permutations."),
    _P("training.multiclass", _Choice(C.MULTICLASS), "ovr", "Multiclass reduction (one-vs-rest)."),
    _P("training.dtype", _Choice(C.DTYPES), "float64", "Floating point precision of kernel values."),
    _P("training.chunk_size", _INT_GE1, C.DEFAULT_CHUNK, "Rows per block of kernel evaluations."),
    _P("training.cache_limit_gb", _POSITIVE, C.DEFAULT_CACHE_LIMIT_GB,
       "Memory allowed for cached kernel rows."),
    # ---------------------------------------------------------------- prediction
    _P("prediction.rules", _ListOf(_Choice(C.RULES), "a non-empty list of rule names", nonempty=True, unique=True),
       C.DEFAULT_RULES, "Prediction rules to evaluate.", grid=False),
    _P("prediction.vote_weight", _Choice(C.VOTE_WEIGHTS), "survival",
       "survival: steps each hypothesis survived (Freund & Schapire); correct: its correct predictions "
       "(Khardon & Wachman)."),
    # ---------------------------------------------------------------- evaluation
    _P("evaluation.mode", _Choice(C.EVALUATION_MODES), "holdout",
       "holdout: the dataset's test split; kfold: cross-validation; nested: with an inner search.",
       grid=False),
    _P("evaluation.folds", _INT_GE2, C.DEFAULT_FOLDS, "Folds of (outer) cross-validation.", grid=False),
    _P("evaluation.inner_folds", _INT_GE2, C.DEFAULT_INNER_FOLDS, "Folds of the inner search.", grid=False),
    _P("evaluation.grid", _Grid(), {}, "Parameter path -> values to try.", grid=False),
    _P("evaluation.search", _Search(), (), "Search plans: lists of grid parameters searched jointly.",
       grid=False),
    _P("evaluation.stratify", _Flag(), False,
       "Stratify the folds of cross-validation by class: each fold gets every class's share to within one "
       "example (as scikit-learn's StratifiedKFold with shuffle). Default false: a shuffled split, one seeded "
       "permutation cut into consecutive folds whatever the classes (the folds of every run recorded before "
       "this key existed). Nested cross-validation stratifies its inner folds too.", grid=False,
       omit_default=True),
    _P("evaluation.fold_seed", _INT_GE0, 0, "Seed of the fold assignment; a grid over it re-draws the folds "
       "(and so the training orders), e.g. to measure how much a cross-validated value varies."),
    _P("evaluation.confidence", _Number(lo=0, lo_open=True, hi=1, hi_open=True), C.DEFAULT_CONFIDENCE,
       "Level of the confidence intervals.", grid=False),
    _P("evaluation.outer", _Choice(("kfold", "holdout")), "kfold",
       "Outer loop of nested cross-validation: kfold (folds of the training data) or holdout (the "
       "dataset's fixed test split, e.g. Khardon & Wachman's USPS, MNIST and Adult runs).",
       when=("mode", ("nested",)), neutral="kfold", grid=False,
       off="{path}{shown} with {sel_path} = {sel}: only nested cross-validation has an outer loop to choose"),
    _P("evaluation.fold_train_size", _Union(_INT_GE1, _NULL), None,
       "Train each fold on this many examples drawn at random from the fold's training part (Khardon & "
       "Wachman's Table 5); null trains on the whole part. Preprocessing is fitted on the whole part.",
       omit_default=True),
    # ---------------------------------------------------------------- output
    _P("output.dir", _Union(_Text(nonempty=True), _NULL), None, "Output directory; null means runs/<name>.",
       grid=False),
    _P("output.figures", _Flag(), True, "Write figures.", grid=False),
    _P("output.float_format", _FloatFormat(), C.DEFAULT_FLOAT_FORMAT,
       "Format of numbers in CSV files (printf style). It is tried on sample error percentages when the config "
       "is read: each must come out as one plain CSV field, a number that plab reads back as the value rounded "
       "to the digits it shows, e.g. '%.6g', '%.10g', '%.4e' or '%.4f'; '%.6g%%', '%d' or '1%g' are refused.",
       grid=False),
)


@lru_cache(maxsize=None)
def algorithms_using(path: str) -> tuple[str, ...]:
    """The algorithms (``algorithm.name`` values, in :data:`~perceptron_lab.constants.ALGORITHMS`
    order) for which key ``path`` of the ``algorithm`` section is in effect: those some row of
    :data:`SCHEMA` for ``path`` applies to (every algorithm for a key without ``when``; none for a
    key of another section). ``algorithms_using('algorithm.lambda')`` is ``('perceptron', 'norma')``."""
    rows = [p for p in SCHEMA if p.path == path and p.section == "algorithm"]

    def used_by(name: str) -> bool:
        return any(p.applies(lambda _key: name) for p in rows)

    return tuple(n for n in C.ALGORITHMS if used_by(n))


def same_setting(path: str, a: str, b: str) -> bool:
    """Whether key ``path`` of the ``algorithm`` section is one setting for the algorithms ``a``
    and ``b``: one row of :data:`SCHEMA` applies to both (every row is one meaning). The
    perceptron's ``eta`` (a learning rate) and NORMA's (another learning rate, with its own
    default) are two rows, as are the Projectron's ``eta`` (a distance threshold) and the
    perceptron's and ALMA's ``C``: a value written for one is not carried to the other."""
    rows = [p for p in SCHEMA if p.path == path and p.section == "algorithm"]
    in_a = [p for p in rows if p.applies(lambda _k: a)]
    return bool(in_a) and in_a == [p for p in rows if p.applies(lambda _k: b)]


def _users(path: str) -> str:
    """``a perceptron parameter`` or ``a parameter of the perceptron, the Projectron ... and NORMA``:
    the algorithms whose schema entries for ``path`` apply."""
    names = list(dict.fromkeys(n for p in SCHEMA if p.path == path and p.when and p.when[0] == "name"
                               for n in p.when[1]))
    if not names:   # a key selected by another setting (kernel.type ...): its message has no {users}
        return ""
    if names == ["perceptron"]:
        return "a perceptron parameter"
    titles = [ALGORITHM_TITLES.get(n, n) for n in names]
    return "a parameter of " + (", ".join(titles[:-1]) + " and " + titles[-1] if len(titles) > 1 else titles[0])


def off_text(p: Param, shown: str, sel: Any, show=repr) -> str:
    """The message for key ``p`` given where its selector (``p.when``) has the value ``sel``, which
    does not use it: ``p.off`` with ``{path}``, ``{shown}`` (`` = value`` or empty), ``{sel_path}``,
    ``{sel}`` (``show(sel)``), ``{sel_name}`` (the chosen algorithm as messages name it) and
    ``{users}`` (the algorithms that have the key) filled in."""
    assert p.when is not None, p.path   # only a key with a selector is ever off
    sel_path = f"{p.section}.{p.when[0]}"
    name = ALGORITHM_TITLES.get(sel, show(sel)) if isinstance(sel, str) else show(sel)
    return p.off.format(path=p.path, shown=shown, sel_path=sel_path, sel=show(sel), sel_name=name,
                        users=_users(p.path))


@lru_cache(maxsize=None)
def _params_of(section: str) -> tuple:
    return tuple(p for p in SCHEMA if p.section == section)


@lru_cache(maxsize=None)
def _attr(section: str, key: str) -> str:
    return next(p.attr for p in SCHEMA if p.section == section and p.key == key)


