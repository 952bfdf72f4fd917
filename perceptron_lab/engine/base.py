"""What the engine's training loops share: their parameters, the training log they write, the
engine's error and the chunking of training steps. The dual loop (:mod:`.perceptron`), the
primal loops (:mod:`.linear`) and ALMA (:mod:`.alma`) import these; this module imports none of them."""

from __future__ import annotations

import threading
from collections import namedtuple
from dataclasses import dataclass, field
from typing import ClassVar

import numba as nb
import numpy as np

from perceptron_lab.errors import PlabError

UNBOUNDED = np.iinfo(np.int32).max

#: Update rules of the chunk loop (resolved from ``params.rule`` before the hot loop).
RULE_PERCEPTRON, RULE_ALMA2 = 0, 1
RULE_CODES = {"perceptron": RULE_PERCEPTRON, "alma": RULE_ALMA2}


#: The buffers a jitted training loop writes its updates to, one entry per update (a named tuple, which
#: numba passes to the loop as one argument): step, example, label column, coefficient, the score
#: before the update, the threshold after it, the label's correct predictions before it, the scale
#: and norm after it (ALMA) and K(x, x). A loop writes only the fields it records.
Updates = namedtuple("Updates", "step ex cls coef score theta cum scale norm kxx")

_UPDATE_DTYPES = {"step": np.int64, "ex": np.int64, "cls": np.int32, "coef": np.float64, "score": np.float64,
                  "theta": np.float64, "cum": np.int64, "scale": np.float64, "norm": np.float64,
                  "kxx": np.float64}


def update_buffers(shape, fields) -> tuple[dict, Updates]:
    """Buffers of ``shape`` for the update fields ``fields`` (names of :data:`Updates`), as a dict
    in the order given and as an :data:`Updates` whose other fields are empty arrays of the same
    number of dimensions (never written)."""
    shape = tuple(np.atleast_1d(shape).tolist())
    bufs = {k: np.empty(shape, dtype=_UPDATE_DTYPES[k]) for k in fields}
    empty = (0,) * len(shape)
    rec = Updates(**{k: bufs[k] if k in bufs else np.empty(empty, dtype=t) for k, t in _UPDATE_DTYPES.items()})
    return bufs, rec


class EngineError(PlabError):
    """The engine cannot run with the given settings (e.g. the kernel cache would not fit): a
    settings problem, exit status 2 like an invalid config."""

    exit_code = 2


@dataclass(frozen=True)
class PerceptronParams:
    """Resolved numeric parameters of the perceptron engine (see the module docstring).

    ``theta_init``, ``C`` and ``tau_abs`` are absolute values; the config layer resolves the
    symbolic settings (``avg_sq_norm``, ``tau`` in units of the average ``K(x, x)``).
    """

    eta: float = 1.0
    theta_init: float = 0.0
    C: float = 0.0
    tau_abs: float = 0.0
    lam: float = 0.0
    alpha_bound: int = UNBOUNDED
    #: The lambda-trick's term in a training example's score: False adds ``y lam K(x, x)`` once x
    #: has caused an update (Khardon & Wachman 2007, eq. (1)); True adds ``y eta alpha_x lam K(x, x)``
    #: (``lam K(x, x)`` on the kernel's diagonal, Kowalczyk et al. 2001; Li et al. 2002).
    lam_diagonal: bool = False

    rule: ClassVar[str] = "perceptron"


@dataclass
class TrainLog:
    """Everything a training pass records; prediction rules are computed from it.

    Arrays ``upd_*`` have one entry per update, in the order the updates happened.
    ``upd_cum_correct`` is the number of correct predictions of that label before the update;
    ``cum_correct_cp[k, c]`` the same at checkpoint ``k``. ``upd_score`` is the score ``v(x)`` of
    the updating example before the update (without the lambda term or threshold), which gives the
    feature-space norms ``|v_{k+1}|^2 = |v_k|^2 + 2 a v_k(x) + a^2 K(x, x)``.

    Generalizations used by ALMA (:mod:`perceptron_lab.engine.alma`); the defaults describe the
    perceptron:

    * ``upd_scale``: the label's scale after each update: hypothesis k scores
      ``upd_scale[k] * sum_{j <= k} coef_j K(x_j, x) - theta_k`` (None: all scales are 1);
    * ``upd_norm``: the hypothesis' norm after each update, when the engine knows it directly
      (None: from the recursion above, times the scale);
    * ``kernel_normalized``: coefficients refer to the normalized kernel
      ``K(x, y) / sqrt(K(x, x) K(y, y))``, which prediction must then use as well;
    * ``hyp_w``: explicit hypotheses, one weight vector (row) per update, for algorithms whose
      hypotheses are not kernel expansions (ALMA_p in primal form, any p); hypothesis k then scores
      ``hyp_w[k] . x - theta_k``, and ``coef``/``upd_score`` are informational only.
    """

    n_train: int
    n_labels: int
    total_steps: int
    order: np.ndarray
    checkpoint_steps: np.ndarray
    theta_init: float
    upd_step: np.ndarray
    upd_ex: np.ndarray
    upd_cls: np.ndarray
    upd_coef: np.ndarray
    upd_score: np.ndarray
    upd_kxx: np.ndarray
    upd_theta: np.ndarray
    upd_cum_correct: np.ndarray
    cum_correct_cp: np.ndarray
    seconds: float = 0.0
    info: dict = field(default_factory=dict)
    upd_scale: np.ndarray | None = None
    upd_norm: np.ndarray | None = None
    kernel_normalized: bool = False
    hyp_w: np.ndarray | None = None

    @property
    def n_updates(self) -> int:
        return int(self.upd_step.shape[0])


def chunk_bounds(n: int, total_steps: int, checkpoint_steps, chunk_size: int, epochs: bool = True) -> np.ndarray:
    """Step positions where chunks start/end: epoch boundaries (unless ``epochs`` is false: for
    loops that wrap around the order themselves), checkpoints and every chunk_size."""
    cuts = set(range(0, total_steps, n)) if epochs else {0}
    cuts.update(int(s) for s in checkpoint_steps)
    cuts.add(total_steps)
    bounds = sorted(c for c in cuts if 0 <= c <= total_steps)
    out = [0]
    for a, b in zip(bounds[:-1], bounds[1:]):
        s = a
        while s + chunk_size < b:
            s += chunk_size
            out.append(s)
        out.append(b)
    return np.unique(np.asarray(out, dtype=np.int64))


def epochs_to_steps(epochs: float, n: int) -> int:
    """Number of training steps in ``epochs`` passes over ``n`` examples (rounded to the nearest)."""
    return int(round(epochs * n))


@nb.njit(cache=True, inline="always")
def sign_of(v):
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return 0.0


_POOL = None
_POOL_LOCK = threading.Lock()


def on_threads(fn, n, *args, threads: int | None = None) -> None:
    """``fn(i0, i1, *args)`` for contiguous ranges ``i0 .. i1 - 1`` that cover ``0 .. n - 1``, one
    range per thread on ``threads`` threads (default numba's thread count of the calling thread,
    :func:`numba.get_num_threads`; at most ``n``), the first range on the calling thread. The
    ranges are those a ``prange`` loop shares out. ``fn`` is a jitted function compiled with
    ``nogil=True`` whose ranges write to disjoint outputs: a parallel loop without numba's parallel
    passes, which compile the loop's body a second time (compiling is most of what a first run
    after installing spends its time on)."""
    # one range needs no thread count (looking numba's up costs more than a small call)
    threads = 1 if n <= 1 else max(1, min(n, nb.get_num_threads() if threads is None else int(threads)))
    if threads == 1:
        fn(0, n, *args)
        return
    bounds = [n * i // threads for i in range(threads + 1)]
    pool = _thread_pool()
    futures = [pool.submit(fn, bounds[i], bounds[i + 1], *args) for i in range(1, threads)]
    try:
        fn(bounds[0], bounds[1], *args)
    finally:
        for f in futures:
            f.result()


def _thread_pool():
    """The process's threads for :func:`on_threads`: one fewer than numba's most threads (the
    calling thread takes a range too), started on first use."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _POOL = ThreadPoolExecutor(max_workers=max(1, nb.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="plab-jit")
        return _POOL
