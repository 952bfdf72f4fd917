"""Settings and the list of benchmark cases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# ----------------------------------------------------------------------------- settings

SEED = 1999                 # training order: np.random.default_rng(SEED).permutation(n)
SPARSE_SEED = 2024          # case 9: the generated features and hyperplane
WARMUP_EXAMPLES = 200       # examples of the untimed warm-up call
ALMA_DIGIT = 0              # case 3 is "this digit vs the rest"
ALMA_ALPHA = 0.9            # River's default; B = 1/alpha and C = sqrt(2) on both sides
ALMA_RULES = ("last", "avg")  # case 3: our test computes these (River predicts with the last hypothesis)
RIVER_BATCH = 256           # River's input dicts are built (untimed) this many at a time
POLY_DEGREE = 4
SVC_C = 100.0               # see svc_same_kernel
SVC_CACHE_MB = 1000         # libsvm kernel cache (scikit-learn's default is 200)
SVC_PIXEL_MAX_N = 20000     # the second SVC setting (pixels / 255, gamma="scale") up to this n
SVC_TIMEOUT = 1800.0        # seconds before an SVC child is stopped and reported as timed out
NYSTROEM_GAMMA = 0.015      # case 12: scikit-learn's MNIST benchmark (Nystroem + LinearSVC)
NYSTROEM_COMPONENTS = 1000
NYSTROEM_C = 100.0
TARGETS = {"linear": 1.0, "alma": 20.0, "kernel_speedup": 5.0, "kernel_points": 0.5, "limit": 0.35, "evaluation": 0.50, "budget_seconds": 15.0}


@dataclass(frozen=True)
class Sizes:
    """Problem sizes of a benchmark run (None: all of MNIST's examples)."""

    linear_train: int | None = None
    test: int | None = None
    kernel_sizes: tuple[int, ...] = (10000, 20000, 60000)
    kernel_epochs: tuple[float, ...] = (1, 10)
    limit_train: int | None = None
    limit_epochs: float = 30
    scaling_sizes: tuple[int, ...] = (6000, 15000, 30000, 60000)
    scaling_epochs: float = 30
    #: case 9: (training rows, test rows, features, density) of the generated text-like problem
    sparse_shape: tuple[int, int, int, float] = (20000, 5000, 100000, 0.001)
    #: case 13: (training examples, epochs, permutations) of the headline run (None: the config's own)
    memory_run: tuple[int | None, float | None, int | None] = (None, None, None)


FULL = Sizes()
QUICK = Sizes(linear_train=1000, test=300, kernel_sizes=(300, 600), limit_train=600, limit_epochs=1,
              scaling_sizes=(200, 400, 800), scaling_epochs=1, sparse_shape=(2000, 500, 10000, 0.01),
              memory_run=(600, 1, 2))


@dataclass(frozen=True)
class Case:
    number: int
    name: str
    file: str
    title: str


CASES = (
    Case(1, "linear", "linear_perceptron", "Linear perceptron, MNIST, 1 epoch, one-vs-rest"),
    Case(2, "averaged", "averaged_perceptron", "Averaged perceptron, MNIST, 1 epoch, one-vs-rest"),
    Case(3, "alma", "alma2_linear", f"ALMA_2 linear, MNIST digit {ALMA_DIGIT} vs rest, 1 pass"),
    Case(4, "kernel", "kernel_poly4", "Degree-4 polynomial kernel on MNIST subsets"),
    Case(5, "limit", "fs1999_d4", "Against the limit: one permutation of configs/mnist_d4.yaml"),
    Case(6, "scaling", "scaling_d4", "Scaling with the training set, d = 4"),
    Case(7, "evaluation", "evaluation_kw_mnist", "Evaluation against its limit: a Khardon & Wachman Table 3 MNIST unit"),
    Case(8, "budget", "budget_forgetron", "Budgeted training: the self-tuned Forgetron, MNIST d = 4, budget 1000, 1 epoch"),
    Case(9, "sparse", "sparse_text", "Sparse input: a generated text-like problem (CSR), linear perceptron, 1 epoch"),
    Case(10, "coldstart", "coldstart", "The first run after installing (numba's cache empty) and the warm quickstart"),
    Case(11, "figures", "figures_quickstart", "The quickstart's figures, next to a blank figure drawn in the same process"),
    Case(12, "nystroem", "mnist_estimator_nystroem",
         "MNIST: the VotedPerceptron estimator (d = 4, 1 epoch) vs Nystroem + LinearSVC"),
    Case(13, "memory", "headline_memory", "Peak memory of the headline run, plab run configs/mnist_d4.yaml"),
)
#: Cases run only when named (``--cases``): cases 12 and 13 need several minutes of a quiet machine each.
ON_REQUEST = ("nystroem", "memory")
CASE_BY_NAME = {c.name: c for c in CASES}


def select_cases(text: str | None) -> list[Case]:
    """Cases named in ``text`` ("1,3" or "linear,alma"; None or "all": every case), in order."""
    if text is None or text.strip() in ("", "all"):
        return [c for c in CASES if c.name not in ON_REQUEST]
    chosen = set()
    for word in (w.strip() for w in text.split(",") if w.strip()):
        if word.isdigit() and 1 <= int(word) <= len(CASES):
            chosen.add(CASES[int(word) - 1].name)
        elif word in CASE_BY_NAME:
            chosen.add(word)
        else:
            names = ", ".join(f"{c.number}/{c.name}" for c in CASES)
            raise SystemExit(f"bench: unknown case {word!r}; expected one of {names}")
    return [c for c in CASES if c.name in chosen]


# ----------------------------------------------------------------------------- machine
