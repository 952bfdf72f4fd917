"""Names, defaults and tolerances shared by the config layer and the modules that consume it.

Every enumeration a config may name lives here, so that validation, the engine and the
reports agree on one spelling. Defaults used by :mod:`perceptron_lab.config.load` are here too;
the config schema table there is the place that says which key each one belongs to.
"""

from __future__ import annotations

import math
from pathlib import Path

#: the package version (also ``perceptron_lab.__version__``): its one source; pyproject.toml reads it
#: (``[tool.setuptools.dynamic]``) and a test checks CITATION.cff against it
__version__ = "0.1.0"


def source_checkout() -> Path | None:
    """The clone of the repository this package is imported from, or None for an installed copy.

    ``plab`` itself never reads the source tree: configs, data and reference tables ship inside the
    package. Only the tools that regenerate the repository's own files (``make reproduce``,
    ``make golden``, ``make docs``) need a clone, an editable install (``pip install -e .``); they
    ask here and stop with :class:`perceptron_lab.errors.CheckoutRequired` when there is none.
    A clone is the folder above ``perceptron_lab/`` that holds ``pyproject.toml`` and ``results/``.
    """
    root = Path(__file__).resolve().parents[1]
    return root if (root / "pyproject.toml").is_file() and (root / "results").is_dir() else None

# --------------------------------------------------------------------------- datasets

#: Preprocessing applied to the features after loading (fitted on the training split).
PREPROCESS = ("none", "minmax", "standardize", "unit_norm")

#: How a UCI data set's instance name (an identifier the UCI description lists as a non-numeric
#: attribute) enters the features: ``drop`` leaves it out; ``nominal`` expands it like any other
#: nominal attribute, one 0/1 indicator per name (Khardon & Wachman 2007, section 3.1: "any nominal
#: attribute ... was translated to a set of binary attributes").
INSTANCE_NAME_READINGS = ("drop", "nominal")
#: The registered data sets with such an instance name (UCI's promoters.names, attribute 2); the
#: numeric identifiers of breast-cancer-wisconsin, wdbc and wpbc are always dropped (Table 1's
#: feature counts leave them out).
DATASETS_WITH_INSTANCE_NAME = ("promoters",)

#: Generated datasets; they take their generator arguments from ``dataset.params``.
#: ``kw_artificial``: Khardon & Wachman (2007) artificial data; ``gentile_sparse``: Gentile (2001)
#: sparse-target data.
DATASET_SYNTHETIC = ("kw_artificial", "gentile_sparse")
#: Formats of a data file of the user's own (``dataset.path``); ``auto`` reads the extension.
USER_FORMATS = ("auto", "csv", "tsv", "libsvm", "npz")
#: File extensions (lower case) and the format each selects under ``dataset.format: auto``.
USER_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".libsvm": "libsvm", ".svm": "libsvm",
                   ".svmlight": "libsvm", ".npz": "npz"}

# --------------------------------------------------------------------------- kernels

KERNELS = ("linear", "poly", "gaussian", "poly_gaussian")
#: Kernels that take ``kernel.degree`` (any other kernel requires degree 1).
KERNELS_WITH_DEGREE = ("poly", "poly_gaussian")
#: Kernels that take (and require) the width ``kernel.sigma``.
KERNELS_WITH_SIGMA = ("gaussian", "poly_gaussian")

# --------------------------------------------------------------------------- algorithms

#: Kernel perceptrons on a memory budget, and NORMA (perceptron_lab.engine.budget).
BUDGET_ALGORITHMS = ("stoptron", "rbp", "forgetron", "projectron", "projectron++", "norma")
ALGORITHMS = ("perceptron", "alma") + BUDGET_ALGORITHMS
#: Prediction rules of the budgeted algorithms (their hypotheses are not a growing sequence of updates).
BUDGET_RULES = ("last", "avg", "vote")
#: The rules of a budgeted run that names none (the voted rule costs a replay of every change).
BUDGET_DEFAULT_RULES = ("last", "avg")
#: NORMA's learning-rate schedules: eta_t = eta, or eta / sqrt(t).
NORMA_SCHEDULES = ("constant", "sqrt")
DEFAULT_PROJECTRON_ETA = 0.1
DEFAULT_NORMA_ETA = 0.1
DEFAULT_NORMA_RHO = 1.0
#: ``auto`` lets the engine choose: primal for the linear kernel, dual otherwise.
FORMS = ("auto", "primal", "dual")
#: How the lambda-trick's term enters a training example's score (``algorithm.lambda_term``):
#: ``indicator`` adds ``lambda K(x, x)`` once x has caused an update (Khardon & Wachman 2007, eq. (1)
#: as printed); ``diagonal`` adds ``lambda K(x, x)`` to the kernel's diagonal, so the term is
#: ``eta alpha_x lambda K(x, x)`` and grows with the updates on x (the dual-form convention of
#: Kowalczyk et al. 2001 and Li et al. 2002).
LAMBDA_TERMS = ("indicator", "diagonal")

#: ``algorithm.theta_init`` value meaning "the average <x_i, x_i> over the training examples".
THETA_AVG_SQ_NORM = "avg_sq_norm"
#: ``algorithm.C`` value meaning "the same value as theta_init".
C_SAME_AS_THETA = "theta_init"
#: ``algorithm.alpha_bound`` value meaning "no bound" (null means the same).
ALPHA_BOUND_UNBOUNDED = "inf"

DEFAULT_ETA = 1.0
DEFAULT_ALMA_ALPHA = 1.0
DEFAULT_ALMA_C = math.sqrt(2.0)
DEFAULT_ALMA_P = 2.0
#: ``algorithm.B`` values: Theorem 3 (part 1)'s B = sqrt(8)/alpha (Gentile 2001), and the B = 1/alpha
#: that §4 states (the same as null).
ALMA_B_THEOREM3 = "sqrt8/alpha"
ALMA_B_STATED = "1/alpha"

# --------------------------------------------------------------------------- training

MULTICLASS = ("ovr",)
DTYPES = ("float32", "float64")
DEFAULT_EPOCHS = 1.0
DEFAULT_CHUNK = 512
DEFAULT_CACHE_LIMIT_GB = 8.0

#: A training set with at most this many entries (examples x features) trains and is evaluated on
#: one thread: on such small problems the thread team's start-up on every jitted call costs more
#: than the parallel work saves (Khardon & Wachman's Table 4, 600 x 50, is one).
#: The measurement is in ``benchmarks/NOTES.md``.
SINGLE_THREAD_MAX_ENTRIES = 1_000_000

#: Two epoch positions (checkpoints, fractional epochs) closer than this are the same position.
EPOCH_TOL = 1e-9

# --------------------------------------------------------------------------- prediction

RULES = ("last", "last_norm", "avg", "avg_norm", "vote", "random", "random_norm", "longest")
DEFAULT_RULES = ("last", "avg", "vote")
#: ``survival``: Freund & Schapire's c_k, the number of steps a hypothesis survived, counting the
#: step that created it; ``correct``: Khardon & Wachman's votes, its correct predictions only.
VOTE_WEIGHTS = ("survival", "correct")

# --------------------------------------------------------------------------- evaluation

EVALUATION_MODES = ("holdout", "kfold", "nested")
DEFAULT_FOLDS = 10
DEFAULT_INNER_FOLDS = 10
DEFAULT_CONFIDENCE = 0.95

# --------------------------------------------------------------------------- output and configs

DEFAULT_RUNS_DIR = "runs"
DEFAULT_FLOAT_FORMAT = "%.6g"
#: Name of an experiment built from a mapping that has no file name to take a default from.
DEFAULT_EXPERIMENT_NAME = "experiment"
#: ``extends: "package:quickstart.yaml"`` names a file in the packaged ``perceptron_lab/configs``.
PACKAGE_CONFIG_PREFIX = "package:"
#: Number of hex digits of the sha256 kept by :func:`perceptron_lab.config.load.config_hash`.
CONFIG_HASH_LENGTH = 12

#: ``plab run`` refuses to start when the output folder's disk has less free space than this:
#: room, several times over, for a part of the largest runs (a full MNIST permutation) and its
#: rows of results.csv (their sizes are in ``benchmarks/NOTES.md``).
MIN_FREE_DISK_MB = 16
