"""Seeded generators for the artificial data of Khardon & Wachman (2007) and Gentile (2001), and
for the problem of DOGMA's budget demo (Orabona's MATLAB library, ``demo.m``).

Both return a :class:`Dataset` with classes ``[-1, 1]`` (index 1 is the positive class).
Each generator draws its pieces (target, instances, label noise, test set) from separate
child streams of ``numpy.random.SeedSequence(seed)``.  So, for one seed, data sets that differ
only in the noise rate share the same target and the same instances and differ only in
which labels are flipped, and Gentile's test set does not depend on the training-set size.
"""

from __future__ import annotations

import numpy as np

from perceptron_lab.datasets.base import Dataset
from perceptron_lab.errors import ConfigError

__all__ = ["kw_artificial", "gentile_sparse", "dogma_demo"]

CLASSES = [-1, 1]


def _streams(seed: int, k: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k)]


def _check_rate(name: str, what: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{name}: {what} must be in [0, 1], got {value}")
    return value


def _check_count(name: str, what: str, value: int, minimum: int = 1) -> int:
    if int(value) != value or value < minimum:
        raise ConfigError(f"{name}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _rejection_sample(draw, accept, n: int, first=None, max_drawn: int | None = None, fail=None):
    """Draw candidates in batches until ``n`` pass ``accept``; keep them in draw order.

    Returns the kept rows and the number of candidates consumed up to and including the
    ``n``-th kept one.  ``first`` is an already drawn first batch.  When ``max_drawn``
    candidates have not produced ``n`` kept rows, ``fail(n_kept, n_drawn)`` is raised.
    """
    parts, n_kept, n_drawn = [], 0, 0
    batch = first
    while True:
        if batch is None:
            if max_drawn is not None and n_drawn >= max_drawn:
                raise fail(n_kept, n_drawn)
            rate = max(n_kept / n_drawn, 0.01) if n_drawn else 0.5
            k = max(int((n - n_kept) / rate * 1.1), 64)
            if max_drawn is not None:
                k = min(k, max_drawn - n_drawn)
            batch = draw(k)
        idx = np.flatnonzero(accept(batch))
        need = n - n_kept
        if len(idx) >= need:
            parts.append(batch[idx[:need]])
            return np.ascontiguousarray(np.vstack(parts)), n_drawn + int(idx[need - 1]) + 1
        parts.append(batch[idx])
        n_kept += len(idx)
        n_drawn += len(batch)
        batch = None


def kw_artificial(
    f: int,
    margin: float,
    noise: float,
    n: int = 600,
    seed: int = 0,
    weight_rule: str = "feature",
) -> Dataset:
    """Khardon & Wachman (2007), section 3.1: ``n`` examples with ``f`` integer features.

    The paper: "each attribute in an example is generated independently using an integer value
    in the range [-10, 10]. We generated the weight vector, w, by flipping a coin for each example
    and adding it to the weight vector on a head. We chose theta as the average of
    1/2 |<w, x_i>| over all x_i. We measured the actual margin of the examples with respect to the
    weight vector and then discarded any examples x_i such that |<w, x_i> - theta| < M * theta
    where M is the margin parameter specified. For the noisy settings, for each example we randomly
    switched the label with probability equal to the desired noise rate."  Their data sets have
    600 examples each, with (f, M, N) in {50, 200, 500} x {0.05, 0.1, 0.25, 0.5, 0.75}
    x {0, 0.05, 0.1, 0.15, 0.25}.

    How this implementation reads it:

    * Attributes are drawn uniformly from the 21 integers -10..10.
    * ``weight_rule="feature"`` (default): the coin is flipped once per feature and a head adds
      that feature's unit vector, i.e. ``w_j = 1`` on heads and ``0`` on tails.  This takes
      "for each example" as a slip for "for each feature".  ``weight_rule="example"`` follows the
      sentence literally: ``w`` is the sum of the examples of the initial pool (below) whose coin
      came up heads.  An all-zero ``w`` (possible only for tiny ``f``) is redrawn.
    * An initial pool of ``n`` examples is drawn; ``theta`` is the mean of ``|<w, x_i>| / 2``
      over that pool, and stays fixed.  The pool is then filtered, and fresh examples are drawn
      and filtered with the same ``w`` and ``theta`` until ``n`` are kept, so every data set
      has exactly ``n`` examples.  Kept examples are in the order they were drawn.
    * The clean label is ``sign(<w, x> - theta)``; an example is discarded when
      ``|<w, x> - theta| < M * theta``, and also when ``<w, x> = theta`` (no label).
    * Each label is then flipped independently with probability ``noise`` (so the number of
      flipped labels is random; ``meta["n_flipped"]`` records it).

    There is no fixed test split (``X_test`` is ``None``).  ``meta`` holds ``f``, ``M``, ``N``,
    ``n``, ``seed``, ``weight_rule``, ``w``, ``theta``, ``n_flipped``, ``flipped`` (bool mask),
    ``clean_y`` (labels in {-1, +1} before noise) and ``n_drawn`` (candidates drawn up to the
    ``n``-th kept one, the initial pool included).
    """
    name = "kw_artificial"
    f = _check_count(name, "f", f)
    n = _check_count(name, "n", n)
    margin = float(margin)
    if not margin >= 0.0:
        raise ConfigError(f"{name}: margin M must be >= 0, got {margin}")
    noise = _check_rate(name, "noise", noise)
    if weight_rule not in ("feature", "example"):
        raise ConfigError(
            f"{name}: weight_rule must be 'feature' or 'example', got {weight_rule!r}"
        )

    rng_w, rng_x, rng_noise = _streams(seed, 3)

    def draw(k: int) -> np.ndarray:
        return rng_x.integers(-10, 11, size=(k, f)).astype(np.float64)

    pool = draw(n)
    while True:
        if weight_rule == "feature":
            w = (rng_w.random(f) < 0.5).astype(np.float64)
        else:
            w = pool[rng_w.random(n) < 0.5].sum(axis=0)
        if np.any(w != 0):
            break

    theta = float(np.mean(0.5 * np.abs(pool @ w)))
    if theta <= 0.0:
        raise ConfigError(f"{name}: theta is 0 for f={f}, seed={seed}; use more features")

    def accept(X: np.ndarray) -> np.ndarray:
        a = X @ w - theta
        return (np.abs(a) >= margin * theta) & (a != 0.0)

    def fail(n_kept: int, n_drawn: int) -> ConfigError:
        return ConfigError(
            f"{name}: only {n_kept} of {n} examples satisfy margin M={margin} after "
            f"{n_drawn} draws (f={f}); use a smaller margin"
        )

    X, n_drawn = _rejection_sample(
        draw, accept, n, first=pool, max_drawn=1000 * n + 1_000_000, fail=fail
    )

    clean = np.where(X @ w - theta > 0, 1, -1).astype(np.int64)
    flipped = rng_noise.random(n) < noise
    labels = np.where(flipped, -clean, clean)
    y = (labels > 0).astype(np.int64)

    meta = {
        "source": "Khardon & Wachman (2007), section 3.1",
        "f": f,
        "M": margin,
        "N": noise,
        "n": n,
        "seed": seed,
        "weight_rule": weight_rule,
        "w": w,
        "theta": theta,
        "n_flipped": int(flipped.sum()),
        "flipped": flipped,
        "clean_y": clean,
        "n_drawn": n_drawn,
    }
    return Dataset(
        name=f"kw_artificial(f={f},M={margin:g},N={noise:g},seed={seed})",
        X_train=X,
        y_train=y,
        X_test=None,
        y_test=None,
        classes=list(CLASSES),
        meta=meta,
    )


def gentile_sparse(
    n_train: int = 10000,
    n_test: int = 10000,
    s: int = 3,
    n_features: int = 300,
    epsilon: float = 0.0,
    seed: int = 0,
) -> Dataset:
    """Gentile (2001), section 4.4: a sparse target in ``n_features`` = 300 dimensions.

    The paper: the target ``u`` in {-1, 0, +1}^300 has its first ``s`` components drawn
    independently from {-1, +1} and the other 300 - s set to 0 (s = 3, 10, 100, 300 in the
    paper).  Training instances ``x`` are drawn at random in [-1, +1]^300; ``x`` gets label +1
    if ``u.x >= 1`` and -1 if ``u.x <= -1``; if ``|u.x| < 1`` it is rejected and a new one is
    drawn.  "The labels so obtained are then flipped with probability epsilon" (0, 0.05, 0.10,
    0.15 in the paper).  Test instances are drawn the same way but with no margin and no noise:
    the label is ``sign(u.x)``.  10000 training and 10000 test examples.

    Readings: "at random in [-1, +1]" is taken as independent uniform (continuous) components;
    noise touches the training labels only (the paper's footnote 10 explains why); test
    instances with ``u.x = 0`` exactly (probability zero) are redrawn.  ``s = 1`` is refused:
    ``|x_1| >= 1`` has probability zero, so no training instance would ever be accepted.

    ``meta`` holds ``u`` (the target vector), ``s``, ``epsilon``, ``seed``, ``n_flipped``,
    ``flipped`` (bool mask over the training set), ``clean_y_train`` (labels in {-1, +1} before
    noise) and ``n_drawn`` (training candidates drawn up to the last one kept).
    """
    name = "gentile_sparse"
    n_train = _check_count(name, "n_train", n_train)
    n_test = _check_count(name, "n_test", n_test, minimum=0)
    n_features = _check_count(name, "n_features", n_features)
    s = _check_count(name, "s", s)
    if s < 2:
        raise ConfigError(
            f"{name}: s must be >= 2; with s=1 no instance in [-1, 1]^n reaches |u.x| >= 1"
        )
    if s > n_features:
        raise ConfigError(f"{name}: s={s} exceeds n_features={n_features}")
    epsilon = _check_rate(name, "epsilon", epsilon)

    rng_u, rng_train, rng_noise, rng_test = _streams(seed, 4)
    u = np.zeros(n_features, dtype=np.float64)
    u[:s] = np.where(rng_u.random(s) < 0.5, -1.0, 1.0)

    def draw(rng: np.random.Generator, k: int) -> np.ndarray:
        return rng.uniform(-1.0, 1.0, size=(k, n_features))

    X_train, n_drawn = _rejection_sample(
        lambda k: draw(rng_train, k), lambda X: np.abs(X @ u) >= 1.0, n_train
    )
    clean = np.where(X_train @ u > 0, 1, -1).astype(np.int64)
    flipped = rng_noise.random(n_train) < epsilon
    y_train = (np.where(flipped, -clean, clean) > 0).astype(np.int64)

    X_test = draw(rng_test, n_test)
    zero = X_test @ u == 0.0
    while zero.any():
        X_test[zero] = draw(rng_test, int(zero.sum()))
        zero = X_test @ u == 0.0
    y_test = (X_test @ u > 0).astype(np.int64)

    meta = {
        "source": "Gentile (2001), section 4.4",
        "u": u,
        "s": s,
        "n_features": n_features,
        "epsilon": epsilon,
        "seed": seed,
        "n_flipped": int(flipped.sum()),
        "flipped": flipped,
        "clean_y_train": clean,
        "n_drawn": n_drawn,
    }
    return Dataset(
        name=f"gentile_sparse(s={s},epsilon={epsilon:g},seed={seed})",
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        classes=list(CLASSES),
        meta=meta,
    )


def dogma_demo(n: int = 20000, noise: float = 0.1, seed: int = 0) -> Dataset:
    """The problem of DOGMA's budget demo (Orabona's MATLAB library, ``demo.m`` of the repository
    ``denizyuret/dogma``): ``n`` points in the plane, labelled by a random hyperplane through the
    origin, a fraction ``noise`` of the labels flipped; the first half trains, the second tests.

    The demo, line by line: ``x = randn(2, n)``; ``w = randn(2, 1)``; ``y = sign(w' * x)``;
    ``rp = randperm(n)``; the labels at ``rp(1 : n * 0.1)`` are negated; ``x(:, 1 : n/2)`` trains
    and ``x(:, n/2+1 : end)`` tests. Its one draw was unseeded; here the instances, ``w`` and the
    flipped positions come from separate child streams of ``numpy.random.SeedSequence(seed)``.
    Exactly ``round(noise * n)`` labels are flipped (a random permutation's first positions, as in
    the demo), so about ``noise`` of the test labels are wrong too and no classifier's expected test
    error is below ``noise``.

    Parameters
    ----------
    n : int, default 20000
        Points drawn (even: half train, half test).
    noise : float, default 0.1
        Fraction of the labels flipped.
    seed : int, default 0
        Seed of the draw.

    Returns
    -------
    Dataset
        Classes ``[-1, 1]``; ``meta`` holds ``n``, ``noise``, ``seed``, ``w``, ``flipped`` (bool
        mask over the ``n`` points, train first) and ``clean_y`` (labels in {-1, +1} before noise).
    """
    name = "dogma_demo"
    n = _check_count(name, "n", n, minimum=2)
    if n % 2:
        raise ConfigError(f"{name}: n must be even (half train, half test), got {n}")
    noise = _check_rate(name, "noise", noise)
    rng_x, rng_w, rng_noise = _streams(seed, 3)
    X = rng_x.standard_normal((n, 2))
    w = rng_w.standard_normal(2)
    clean = np.where(X @ w > 0, 1, -1).astype(np.int64)
    flipped = np.zeros(n, dtype=bool)
    flipped[rng_noise.permutation(n)[: int(round(noise * n))]] = True
    labels = np.where(flipped, -clean, clean)
    y = (labels > 0).astype(np.int64)
    half = n // 2
    meta = {"source": "DOGMA demo.m (denizyuret/dogma)", "n": n, "noise": noise, "seed": seed, "w": w,
            "flipped": flipped, "clean_y": clean}
    return Dataset(name=f"dogma_demo(n={n},noise={noise:g},seed={seed})", X_train=X[:half], y_train=y[:half],
                   X_test=X[half:], y_test=y[half:], classes=list(CLASSES), meta=meta)
