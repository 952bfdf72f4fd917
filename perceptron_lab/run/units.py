"""Running the units of a plan (:mod:`perceptron_lab.run.plan`): each unit is trained once and
evaluated at every checkpoint into rows of the long results format; :func:`run_part` runs the
units a part persists, one after another or (a fold's part across grid points) together.

Everything here runs from a grid point's :class:`~perceptron_lab.run.spec.UnitSpec` and reads no
config. The algorithm's row of :data:`~perceptron_lab.engine.families.ALGORITHMS` says how its
kernel is prepared and how it predicts; "dense or sparse" is the engine's to decide
(:func:`~perceptron_lab.engine.families.train_algorithm`).
"""

from __future__ import annotations

import csv
import io
import time

import numpy as np
import pandas as pd

from perceptron_lab.datasets.base import Dataset
from perceptron_lab.engine import label_matrix, train_algorithm
from perceptron_lab.engine.budget import (EV_INSERT, EV_MARGIN, EV_PROJECT, budget_counts, budget_errors,
                                          unit_diag_kernel)
from perceptron_lab.engine.families import KERNEL_UNIT_DIAG, PREDICT_BUDGET, never_updates, perceptron_params
from perceptron_lab.engine.intercept import intercept_kernel, with_intercept
from perceptron_lab.engine.kernels import kernel_diag
from perceptron_lab.engine.seeds import training_order
from perceptron_lab.errors import ConfigError, NumericError, PlabError
from perceptron_lab.model.predict import RULES, counts_at_checkpoints, evaluate, evaluate_shared
from perceptron_lab.run.evaluation import inner_kfold_indices, kfold_indices
from perceptron_lab.run.inputs import preprocess
from perceptron_lab.run.plan import RESULT_COLUMNS, Part, Plan, Unit
from perceptron_lab.run.spec import UnitSpec
from perceptron_lab.engine.threads import threads_for
from perceptron_lab.run.runtime import peak_rss_mb

# ----------------------------------------------------------------------------- running


def _fmt(v, float_format):
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return float_format % v


class _Splits:
    """Fold indices of one dataset, computed once per part."""

    def __init__(self, spec: UnitSpec, n: int, y=None):
        self.spec, self.n = spec, n
        #: the labels the folds are stratified by (``evaluation.stratify``), else None
        self.y = y if spec.stratify else None
        self._outer = None
        self._inner = {}

    def outer(self):
        if self._outer is None:
            self._outer = kfold_indices(self.n, self.spec.folds, self.spec.fold_seed, self.y)
        return self._outer

    def inner(self, fold: int):
        if fold not in self._inner:
            train = np.arange(self.n) if fold < 0 else self.outer()[fold][0]
            self._inner[fold] = inner_kfold_indices(train, self.spec.inner_folds, self.spec.fold_seed, fold, self.y)
        return self._inner[fold]


def unit_data(spec: UnitSpec, ds: Dataset, unit: Unit, splits: _Splits | None = None):
    """(X_train, y_train, X_test, y_test) of a unit, before preprocessing."""
    if unit.fold < 0 and unit.inner_fold < 0:
        if ds.X_test is None:
            raise ConfigError(f"{spec.source}: dataset {ds.name} has no fixed test split; "
                              "set evaluation.mode: kfold")
        return ds.X_train, ds.y_train, ds.X_test, ds.y_test
    splits = splits or _Splits(spec, len(ds.y_train), ds.y_train)
    tr, te = splits.inner(unit.fold)[unit.inner_fold] if unit.inner_fold >= 0 else splits.outer()[unit.fold]
    return ds.X_train[tr], ds.y_train[tr], ds.X_train[te], ds.y_train[te]


def fold_subsample(spec: UnitSpec, unit: Unit, n: int):
    """Rows of a fold's training part (``n`` rows) that a unit trains on: all of them, or
    ``evaluation.fold_train_size`` drawn at random without replacement.

    Khardon & Wachman (2007) Table 5 parameterizes 10-fold cross-validation on Adult "by the number
    of examples in the training set"; §3.2 permutes the training set at random before running, so
    N examples of a fold's training part are N examples drawn at random. The draw depends on the
    fold, the permutation and N only (not on the grid's other values), so every tau of a column
    trains on the same examples.
    """
    size = spec.fold_train_size
    if size is None:
        return None
    if size > n:
        raise ConfigError(f"{spec.source}: evaluation.fold_train_size = {size} exceeds the {n} examples of a "
                          "fold's training part; lower it or use fewer folds")
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 104729, unit.fold + 1,
                                                        unit.permutation, size]))
    return np.sort(rng.choice(n, size=size, replace=False))


def unit_design(spec: UnitSpec, Xtr, Xte=None):
    """(X_train, X_test) of a unit as its kernel takes them: preprocessed (fitted on ``Xtr``), then
    with the constant feature of ``kernel.fit_intercept`` where the kernel takes the intercept as
    a feature (:func:`~perceptron_lab.engine.intercept.with_intercept`). ``Xte`` may be None."""
    Xtr, Xte = preprocess(spec.preprocess, Xtr, Xte)
    _, Xtr, Xte = with_intercept(spec.kernel, spec.fit_intercept, Xtr, Xte)
    return Xtr, Xte


def unit_kernel(spec: UnitSpec, Xtr):
    """(float type, kernel prepared on the training rows ``Xtr``) of a unit's run, as the
    algorithm's row of :data:`~perceptron_lab.engine.families.ALGORITHMS` says: checked against
    ``Xtr`` for the range of the float type (the kernel takes its features through
    :meth:`~perceptron_lab.engine.kernels.Kernel.features`: a power of two, when the features as
    given are beyond the float range), or for a budgeted algorithm besides scaled to
    ``max_i K(x_i, x_i) = 1`` on those rows, in float64 (values that overflow float64 stop).
    ``Xtr`` are the rows of :func:`unit_design`; the kernel is the one ``kernel.fit_intercept``
    makes (:func:`~perceptron_lab.engine.intercept.intercept_kernel`)."""
    base = intercept_kernel(spec.kernel, spec.fit_intercept)
    if spec.algorithm.kernel == KERNEL_UNIT_DIAG:
        X64 = np.asarray(Xtr, dtype=np.float64)
        kernel = base.range_safe(X64, np.float64, rescale_values=False, unit_diag=True)
        kernel = unit_diag_kernel(kernel, kernel.features(X64))
        if not np.all(np.isfinite(kernel_diag(kernel, kernel.features(X64)))):
            raise NumericError(f"{spec.source}: K(x, x) overflows float64 for {kernel.describe()}; "
                               "use a larger kernel.scale or a smaller kernel.degree")
        return np.float64, kernel
    dtype = np.float32 if spec.dtype == "float32" else np.float64
    return dtype, base.range_safe(Xtr, dtype)


def range_note(spec: UnitSpec, ds: Dataset) -> str | None:
    """What :meth:`~perceptron_lab.engine.kernels.Kernel.range_safe` does to the features of a
    grid point on the whole training set of ``ds``, in one line (None: nothing, or a kernel each
    unit refuses itself)."""
    Xtr, _ = unit_design(spec, ds.X_train)
    try:
        _, kernel = unit_kernel(spec, Xtr)
    except NumericError:
        return None
    return kernel.rescale_note()


def never_update_warnings(plan: Plan, ds: Dataset) -> list[str]:
    """One line per grid point whose algorithm can make no update at all on ``ds``'s training set
    (:func:`~perceptron_lab.engine.families.never_updates`: a Projectron whose ``eta`` is at least
    ``sqrt(max K(x, x))`` of the kernel it computes, NORMA with ``rho = 0``). A fold trains on a
    part of those rows, whose largest ``K(x, x)`` is no larger, so each of its units never updates
    either."""
    out = []
    for g, spec in sorted(plan.specs.items()):
        if spec.algorithm.predict != PREDICT_BUDGET or spec.name not in ("projectron", "projectron++", "norma"):
            continue
        try:
            Xtr, _ = unit_design(spec, ds.X_train)
            _, kernel = unit_kernel(spec, Xtr)
            top = float(np.max(kernel_diag(kernel, kernel.features(np.asarray(Xtr, dtype=np.float64)))))
        except (NumericError, ValueError):
            continue  # the units refuse this kernel themselves
        why = never_updates(spec.settings, top)
        if why:
            where = f"grid point {g} ({spec.params_text})" if len(plan.specs) > 1 else spec.name
            out.append(f"{where}: {why}")
    return out


#: The budgeted log's update events a unit's timings count (:func:`budget_update_notes` reads them).
_EVENT_COUNTS = {"insertions": EV_INSERT, "projections": EV_PROJECT, "margin_updates": EV_MARGIN}


def budget_update_notes(plan: Plan, timings: dict) -> list[str]:
    """Lines saying where a budgeted algorithm ran as a simpler one, from the units' event counts
    (``timings``: unit key -> timings, as :func:`run_unit` returns them):

    * a Projectron(++) that projected no mistake: every mistake was farther than ``eta`` from the
      span of the support set and the set was never full, so it made the kernel perceptron's
      updates (the Stoptron's, at this budget);
    * a Projectron++ without a margin update: each needs ``delta < eta (1 - y f(x)) < eta``
      (Orabona, Keshet & Caputo 2009, Figure 2), which no margin error met, so it made the
      Projectron's updates and its rows are the Projectron's.
    """
    counts: dict = {}
    for key, t in timings.items():
        if not str(key).startswith("g") or "projections" not in t:
            continue
        g = int(str(key)[1:4])
        c = counts.setdefault(g, {"insertions": 0, "projections": 0, "margin_updates": 0, "units": 0})
        c["insertions"] += int(t["insertions"])
        c["projections"] += int(t["projections"])
        c["margin_updates"] += int(t["margin_updates"])
        c["units"] += 1
    out = []
    for g, c in sorted(counts.items()):
        spec = plan.specs.get(g)
        if spec is None or spec.name not in ("projectron", "projectron++") or c["insertions"] == 0:
            continue  # no support vector at all: never_update_warnings says why
        where = f"grid point {g} ({spec.name}, {spec.params_text})"
        eta = spec.settings.params().eta
        if spec.name == "projectron++" and c["margin_updates"] == 0:
            out.append(f"{where}: no margin update in {c['units']} unit(s): each needs the example within "
                       f"eta (1 - y f(x)) < eta = {eta:g} of the span of the support set, which no margin error was, "
                       "so it made the Projectron's updates (its rows equal the Projectron's)")
        if c["projections"] == 0:
            out.append(f"{where}: no mistake was projected in {c['units']} unit(s): each was farther than eta = "
                       f"{eta:g} from the span of the support set, which was never full, so it made the kernel "
                       "perceptron's updates (its rows equal the Stoptron's at this budget)")
    return out


def unit_order(spec: UnitSpec, unit: Unit, n: int):
    """(training order, seed of the random prediction rule) of a unit on ``n`` training examples
    (:func:`~perceptron_lab.engine.seeds.training_order` of the spec's seed and the unit's
    permutation, fold and inner fold). Anything that retrains a unit (e.g. the Gentile margin
    figures) takes its order from here."""
    return training_order(n, spec.seed, unit.permutation, unit.fold, unit.inner_fold)


def run_unit(spec: UnitSpec, ds: Dataset, unit: Unit, progress=None, splits=None, phase=None):
    """Train and evaluate one unit of the grid point ``spec``; returns (rows, timings).

    ``splits`` may be passed by a caller that runs many units of one grid point. ``phase(text)``
    is told when training and evaluation start (the progress bar shows it).
    """
    data = unit_inputs(spec, ds, unit, splits)
    Xtr, ytr, Xte, yte, dtype, kernel = data
    binary = ds.n_classes == 2
    with threads_for(Xtr.size):
        log, rule_seed = train_unit(spec, ds, unit, data, progress, phase)
        if phase is not None:
            phase(f"evaluating {unit.key} ({len(spec.rules)} rules x {log.checkpoint_steps.size} "
                  "checkpoints)")
        t1 = time.perf_counter()
        if spec.algorithm.predict == PREDICT_BUDGET:
            err_m, err_b = budget_errors(log, kernel, Xtr, Xte, yte, binary, RULES, spec.rules)
        else:
            err_m, err_b = evaluate(log, kernel, Xtr, Xte, yte, binary, vote_weight=spec.vote_weight,
                                    seed=rule_seed, dtype=dtype, rules=spec.rules)
        eval_s = time.perf_counter() - t1
    return _unit_rows(spec, ds, unit, kernel, log, err_m, err_b, len(ytr), len(yte), eval_s)


def unit_inputs(spec: UnitSpec, ds: Dataset, unit: Unit, splits=None):
    """(X_train, y_train, X_test, y_test, float type, kernel) of a unit: its fold's data,
    preprocessed and subsampled, and the kernel prepared on its training rows (:func:`unit_kernel`)."""
    Xtr, ytr, Xte, yte = unit_data(spec, ds, unit, splits)
    Xtr, Xte = unit_design(spec, Xtr, Xte)
    sub = fold_subsample(spec, unit, len(ytr))
    if sub is not None:
        Xtr, ytr = Xtr[sub], ytr[sub]
    dtype, kernel = unit_kernel(spec, Xtr)
    return kernel.features(Xtr), ytr, kernel.features(Xte), yte, dtype, kernel


def train_unit(spec: UnitSpec, ds: Dataset, unit: Unit, data, progress=None, phase=None):
    """(training log, seed of the random rule) of a unit on ``data`` (:func:`unit_inputs`): the one
    place that assembles "train this unit" for ``plab run`` and the papers' retraining."""
    Xtr, ytr, _, _, dtype, kernel = data
    order, rule_seed = unit_order(spec, unit, len(ytr))
    if phase is not None:
        phase(f"training {unit.key}")
    log = train_algorithm(spec.settings, Xtr, label_matrix(ytr, ds.n_classes), kernel,
                          order, spec.epochs, spec.checkpoints, dtype=dtype,
                          chunk_size=spec.chunk_size, cache_limit_gb=spec.cache_limit_gb, progress=progress,
                          seed=rule_seed, record_changes="vote" in spec.rules, source=spec.source)
    return log, rule_seed


def _unit_rows(spec: UnitSpec, ds, unit, kernel, log, err_m, err_b, n_train: int, n_test: int, eval_s: float):
    """(rows of the long results format, timings) of a trained and evaluated unit."""
    budgeted = spec.algorithm.predict == PREDICT_BUDGET
    binary = ds.n_classes == 2
    epochs_all, main = spec.checkpoints, spec.main
    # checkpoints that round to the same step count are evaluated once
    steps = [int(round(e * n_train)) for e in epochs_all]
    cp_of = {s: i for i, s in enumerate(log.checkpoint_steps.tolist())}
    counts = budget_counts(log) if budgeted else counts_at_checkpoints(log)

    ff = spec.float_format
    # the kernel as configured (kernel.fit_intercept may compute a Gaussian one as poly_gaussian)
    base = [ds.name, spec.kernel.name, spec.kernel.degree, spec.name, spec.params_text,
            unit.grid_point, unit.fold, unit.permutation]
    tail = [str(unit.inner_fold), ""] if spec.nested else []
    labels = ["all"] if binary else [str(c) for c in ds.classes]
    rows = []
    for e, s in zip(epochs_all, steps):
        k = cp_of[s]
        ep = f"{e:g}"
        is_main = e in main
        rows.append(base + [ep, "none", "", "all", "mistakes", _fmt(int(counts["mistakes"][k].sum()), ff)] + tail)
        rows.append(base + [ep, "none", "", "all", "support_vectors",
                            _fmt(int(counts["support_vectors_union"][k]), ff)] + tail)
        if is_main and not binary:
            for c, lab in enumerate(labels):
                rows.append(base + [ep, "none", "", lab, "mistakes", _fmt(int(counts["mistakes"][k, c]), ff)] + tail)
                rows.append(base + [ep, "none", "", lab, "support_vectors",
                                    _fmt(int(counts["support_vectors"][k, c]), ff)] + tail)
        for rule in spec.rules:
            r = RULES.index(rule)
            name, norm = (rule[:-5], "true") if rule.endswith("_norm") else (rule, "false")
            rows.append(base + [ep, name, norm, "all", "test_error_pct",
                                _fmt(100.0 * err_m[k, r] / n_test, ff)] + tail)
            if is_main and not binary:
                for c, lab in enumerate(labels):
                    rows.append(base + [ep, name, norm, lab, "test_error_pct",
                                        _fmt(100.0 * err_b[k, r, c] / n_test, ff)] + tail)
    timings = {"unit": unit.key, "train_seconds": round(log.seconds, 3), "eval_seconds": round(eval_s, 3),
               "updates": log.n_updates, "n_train": n_train, "n_test": n_test, "peak_rss_mb": peak_rss_mb()}
    if budgeted:  # which updates: budget_update_notes says where an algorithm ran as a simpler one
        timings.update({k: int(np.count_nonzero(log.ev_kind == v)) for k, v in _EVENT_COUNTS.items()})
    return rows, timings


def run_shared(plan: Plan, ds: Dataset, units, splits=None, progress=None, unit_done=None, phase=None):
    """Train the units of one fold across grid points (a :func:`fold_shared` part): one after
    another, or with :func:`fold_lockstep` those of each permutation together
    (:func:`~perceptron_lab.engine.perceptron.train_lockstep`); then evaluate them together
    (:func:`~perceptron_lab.model.predict.evaluate_shared`); returns (rows, timings) in the units' order.
    A unit's evaluation seconds are its own scan plus its share of the kernel block's."""
    specs = plan.specs
    trained = {}
    # every unit of the part reads the same fold with the same kernel
    data = unit_inputs(specs[units[0].grid_point], ds, units[0], splits)
    lockstep = plan.lockstep
    groups: dict = {}
    for u in units:
        groups.setdefault(u.permutation if lockstep else id(u), []).append(u)
    for group in groups.values():
        with threads_for(data[0].size):
            if len(group) > 1:
                logs = _train_lockstep(specs, ds, group, data, progress, phase)
            else:
                logs = [train_unit(specs[group[0].grid_point], ds, group[0], data, progress, phase)]
        for u, log in zip(group, logs):
            trained[id(u)] = (u, specs[u.grid_point]) + tuple(log)
            if unit_done is not None:
                unit_done(plan.steps[u.key])
    trained = [trained[id(u)] for u in units]
    Xtr, ytr, Xte, yte, dtype, kernel = data
    if phase is not None:
        phase(f"evaluating {len(units)} runs together")
    items = [(log, spec.vote_weight, rule_seed, spec.rules) for _, spec, log, rule_seed in trained]
    with threads_for(Xtr.size):
        results = evaluate_shared(items, kernel, Xtr, Xte, yte, ds.n_classes == 2, dtype=dtype)
    rows, timings = [], []
    for (u, spec, log, _), (err_m, err_b, secs) in zip(trained, results):
        r, tm = _unit_rows(spec, ds, u, kernel, log, err_m, err_b, len(ytr), len(yte), secs)
        rows.extend(r)
        timings.append(tm)
    return rows, timings


def _train_lockstep(specs, ds, group, data, progress=None, phase=None):
    """[(training log, seed of the random rule)] of the units ``group`` (one fold and permutation,
    several grid points of a :func:`fold_lockstep` config) on ``data``, trained in lockstep."""
    from perceptron_lab.engine.perceptron import train_lockstep

    Xtr, ytr, _, _, dtype, kernel = data
    first = specs[group[0].grid_point]
    orders = [unit_order(specs[u.grid_point], u, len(ytr)) for u in group]
    order = orders[0][0]
    if not all(np.array_equal(o, order) for o, _ in orders):
        raise PlabError(f"{first.source}: units {group[0].key} ... trained in lockstep have different orders")
    seeds = [seed for _, seed in orders]
    params = perceptron_params([specs[u.grid_point].settings for u in group], Xtr, kernel)
    if phase is not None:
        phase(f"training {len(group)} runs in lockstep ({group[0].key} ...)")
    logs = train_lockstep(Xtr, label_matrix(ytr, ds.n_classes), kernel, params, order, first.epochs,
                          first.checkpoints, chunk_size=first.chunk_size, dtype=dtype, progress=progress,
                          form=first.settings.form, cache_limit_gb=first.cache_limit_gb)
    return list(zip(logs, seeds))


def run_part(plan: Plan, part: Part, data_dir=None, progress=None, unit_done=None, phase=None):
    """Run every unit of one of ``plan``'s parts; returns (CSV text of its rows, list of unit
    timings).

    ``progress(steps)`` is called as training advances; ``unit_done(steps)`` after each unit.
    """
    spec = plan.spec(part)
    ds = plan.data(part, data_dir)
    splits = _Splits(spec, len(ds.y_train), ds.y_train)
    if part.shared:
        rows, timings = run_shared(plan, ds, part.units, splits, progress=progress, unit_done=unit_done, phase=phase)
        return rows_to_csv(rows, list(plan.columns)), timings
    rows, timings = [], []
    for u in part.units:
        r, tm = run_unit(spec, ds, u, progress=progress, splits=splits, phase=phase)
        rows.extend(r)
        timings.append(tm)
        if unit_done is not None:
            unit_done(plan.steps[u.key])
    return rows_to_csv(rows, list(plan.columns)), timings


#: Training rows (and test rows) of the slice :func:`warm_up` runs on.
WARM_UP_ROWS = 200


def warm_up(plan: Plan, part: Part, ds: Dataset) -> None:
    """Compile (first use) or load from numba's on-disk cache the jitted code that ``part`` runs:
    its first units are trained and evaluated, through the same functions as :func:`run_part`, on
    the first :data:`WARM_UP_ROWS` rows of ``ds``, and their results are thrown away.

    Compilation then happens here, before any training is timed, and a progress bar's rate is
    measured on training alone. The slice keeps the features' dtype, the classes and the config,
    which are what numba specializes on. Nothing here changes a result: the warm-up's rows are
    never written, and the kernel columns it cached are released. A failure is left to the run
    itself to report (a config error, say, stops the run with its own message)."""
    from perceptron_lab.engine import columns

    spec = plan.spec(part)
    size = spec.fold_train_size or 0
    k = min(len(ds.y_train), max(WARM_UP_ROWS, 2 * size))
    kt = None if ds.X_test is None else min(len(ds.y_test), WARM_UP_ROWS)
    tiny = Dataset(ds.name, ds.X_train[:k], ds.y_train[:k], None if kt is None else ds.X_test[:kt],
                   None if kt is None else ds.y_test[:kt], ds.classes, ds.meta)
    try:
        splits = _Splits(spec, k, tiny.y_train)
        if part.shared:   # two units of the first permutation: lockstep training and shared evaluation
            first = part.units[0].permutation
            run_shared(plan, tiny, [u for u in part.units if u.permutation == first][:2], splits)
        else:
            run_unit(spec, tiny, part.units[0], splits=splits)
    except Exception:   # noqa: BLE001 -- the run raises it again on the real data
        pass
    finally:
        columns.release()


# ----------------------------------------------------------------------------- files


def rows_to_csv(rows, columns=RESULT_COLUMNS) -> str:
    """The CSV text of ``rows`` under ``columns``, as ``pandas.DataFrame.to_csv`` writes it.

    Rows whose values are all ``str`` or ``int`` (a unit's rows: the values come formatted) are
    written with the csv module, which for such values writes the same bytes as pandas (each
    value's ``str``, quoted only where it holds a comma, a quote or a line break) without
    building a DataFrame for every part; any other value goes through pandas itself."""
    buf = io.StringIO()
    if all(type(v) is str or type(v) is int for row in rows for v in row):
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
    else:
        pd.DataFrame(rows, columns=columns).to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()


