"""Evaluation protocols: fold assignment, grid plans, parameter search, nested cross-validation
and confidence intervals.

Khardon & Wachman (2007), §3 run two protocols over the same grid of parameter values:

* **parameter search** (Tables 3-5): every grid point is evaluated by 10-fold cross-validation and
  a table cell is the best mean accuracy over the points of its column, *excluding the inactive
  value* of each of the column's parameters (§3.3: "any accuracy obtained in the tau column is
  necessarily obtained with a value tau != 0"); the column "Nothing" is the point where every
  searched parameter is inactive. This is hindsight, not a protocol for choosing parameters.
* **parameter optimization** (Tables 6-7): double (nested) cross-validation. In each outer fold the
  parameters are chosen by cross-validation on the outer training part only ("inner folds"), the
  learner is trained on the whole outer training part with them and tested on the outer test
  fold. Here a column's candidates *include* the inactive value (§3.4). The sequential searches
  tau -> alpha and tau -> lambda first choose tau (others inactive), then, with tau fixed, alpha
  (or lambda). Accuracies are reported with the 95% T-confidence interval of footnote 5,
  ``mean ± t_{k-1, 0.975} * s / sqrt(k - 1)`` with the maximum-likelihood standard deviation
  ``s = sqrt(sum (y_i - mean)^2 / k)``; for k = 10 folds that is 0.754 s.

Configs express both with ``evaluation.grid`` (values per parameter path) and
``evaluation.search`` (plans): a plan is a list of paths searched jointly (``[algorithm.tau,
algorithm.lambda]`` = the tau x lambda column) or a list of stages searched in turn
(``[[algorithm.tau], [algorithm.alpha_bound]]`` = tau -> alpha). A searched parameter's inactive
value is the config's own value for it (tau = 0, lambda = 0, alpha_bound = null by default).
Grid parameters that no plan names (e.g. ``dataset.name``) are *settings*: every setting is a
separate problem with its own search.

With plans, the grid points are the union over plans of each plan's value product (the other
searched parameters inactive) plus the all-inactive point, per setting -- not the full cartesian
product of the grid (Khardon & Wachman never combine lambda with alpha). Without plans the grid is
the cartesian product of its values, as for any other sweep.

Selection and summaries read the long results format (the values written to ``parts/``), so a
resumed or parallel run selects exactly what an uninterrupted serial run selects.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

#: Two mean errors closer than this (in percentage points) are a tie; ties go to the candidate
#: listed first (the grid lists values from no effect to strong effect, so ties prefer the weaker
#: setting). Values pass through the results' text format, so exact float equality is not reliable.
TIE_TOL_PP = 1e-6

#: Label of the implicit plan with every searched parameter inactive (the paper's "Nothing").
NOTHING = "nothing"

#: How plan labels name a parameter: the last component of its path, except these.
SHORT_NAMES = {"algorithm.alpha_bound": "alpha", "algorithm.lambda": "lambda", "algorithm.tau": "tau"}


# ----------------------------------------------------------------------------- folds


def _stratified_parts(perm: np.ndarray, y, folds: int) -> list:
    """The test folds of a stratified split: the shuffled positions ``perm`` sorted by class (a
    stable sort, so each class keeps its shuffled order), then dealt to the folds in turn. Every
    fold gets each class's count to within one example (as scikit-learn's ``StratifiedKFold``),
    and the folds' sizes differ by at most one."""
    by_class = perm[np.argsort(np.asarray(y)[perm], kind="stable")]
    return [by_class[k::folds] for k in range(folds)]


def kfold_indices(n: int, folds: int, seed: int, y=None):
    """k-fold split of ``range(n)``: a list of (train_idx, test_idx), deterministic in ``seed``.

    Without ``y`` (``evaluation.stratify: false``, the default) a shuffled split: one seeded
    permutation cut into ``folds`` consecutive parts, whatever the classes. With the labels ``y``
    (``evaluation.stratify: true``) the same permutation is stratified by class
    (:func:`_stratified_parts`)."""
    perm = np.random.default_rng(np.random.SeedSequence([seed, 7919])).permutation(n)
    parts = np.array_split(perm, folds) if y is None else _stratified_parts(perm, y, folds)
    return [(np.sort(np.concatenate(parts[:k] + parts[k + 1:])), np.sort(parts[k])) for k in range(folds)]


def inner_kfold_indices(train_idx: np.ndarray, folds: int, seed: int, outer: int, y=None):
    """k-fold split of the outer training part ``train_idx`` (indices into the full data).

    Only the examples of ``train_idx`` are ever assigned to an inner fold, so nothing chosen on
    the inner folds can depend on the outer test fold. ``outer`` (-1 for a fixed test split)
    makes every outer fold's inner split its own. ``y`` (the labels of the full data): stratified
    by class, as :func:`kfold_indices`.
    """
    train_idx = np.asarray(train_idx)
    perm = np.random.default_rng(np.random.SeedSequence([seed, 7919, outer + 1])).permutation(train_idx.size)
    parts = np.array_split(perm, folds) if y is None else _stratified_parts(perm, np.asarray(y)[train_idx], folds)
    return [(train_idx[np.sort(np.concatenate(parts[:k] + parts[k + 1:]))], train_idx[np.sort(parts[k])])
            for k in range(folds)]


def training_folds(cfg, y):
    """The training parts of a config's cross-validation that might hold a single class, lazily.

    Yields ``(description, row indices)`` for :func:`perceptron_lab.datasets.base.validate_dataset`.
    A training part lacks every class but one only when all examples of the other classes sit in
    its test fold, so nothing is computed (or yielded) when the examples outside the largest class
    outnumber the largest possible test fold, which is the case for every real dataset.
    """
    ev = cfg.evaluation
    if ev.mode == "holdout":
        return
    y = np.asarray(y)
    n = y.size
    if n == 0:
        return
    others = n - int(np.bincount(y).max())
    outer_kfold = ev.mode == "kfold" or ev.outer == "kfold"
    max_outer = -(-n // ev.folds) if outer_kfold else 0
    check_inner = ev.mode == "nested" and others <= max_outer + -(-n // ev.inner_folds)
    if not (outer_kfold and others <= max_outer) and not check_inner:
        return
    strata = y if getattr(ev, "stratify", False) else None
    outer = [tr for tr, _ in kfold_indices(n, ev.folds, ev.fold_seed, strata)] if outer_kfold else []
    if others <= max_outer:
        for k, tr in enumerate(outer):
            yield f"fold {k + 1} of {ev.folds} (evaluation.folds)", tr
    if not check_inner:
        return
    for k, tr in (enumerate(outer) if outer_kfold else [(-1, np.arange(n))]):
        for j, (itr, _) in enumerate(inner_kfold_indices(tr, ev.inner_folds, ev.fold_seed, k, strata)):
            of = f" of outer fold {k + 1}" if k >= 0 else ""
            yield f"inner fold {j + 1} of {ev.inner_folds}{of} (evaluation.inner_folds)", itr


# ----------------------------------------------------------------------------- confidence


def t_quantile(q: float, dof: int) -> float:
    """The ``q`` quantile of Student's t distribution with ``dof`` degrees of freedom.

    ``scipy.special.stdtrit`` is the function ``scipy.stats.t.ppf`` evaluates for ``0 < q < 1``;
    called directly, it spares a run the import of ``scipy.stats`` (every distribution's
    docstrings are parsed on import), which costs more than the rest of a finished search's tables."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, q))


def t_interval(values, confidence: float = 0.95):
    """(mean, maximum-likelihood sd, half-width of the T-confidence interval) of per-fold values.

    Khardon & Wachman (2007), footnote 5: ``s = sqrt(sum_i (y_i - mean)^2 / k)`` and the interval
    ``mean ± t_{k-1, (1+confidence)/2} * sqrt(sum_i (y_i - mean)^2 / (k (k - 1)))``, i.e.
    ``t * s / sqrt(k - 1)`` (= 0.754 s for k = 10 at 95%). With one value the sd and the
    half-width are NaN.
    """
    y = np.asarray(values, dtype=float)
    k = y.size
    if k == 0:
        return math.nan, math.nan, math.nan
    mean = float(y.mean())
    if k < 2:
        return mean, math.nan, math.nan
    s = float(np.sqrt(np.mean((y - mean) ** 2)))
    return mean, s, t_quantile((1.0 + confidence) / 2.0, k - 1) * s / math.sqrt(k - 1)


# ----------------------------------------------------------------------------- plans and grid


@dataclass(frozen=True)
class SearchPlan:
    """One column of a search: stages of parameter paths (one stage = a joint search)."""

    stages: tuple[tuple[str, ...], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(k for st in self.stages for k in st)

    @property
    def label(self) -> str:
        """``nothing``, ``tau``, ``tau x lambda``, ``tau->alpha`` (see :data:`SHORT_NAMES`)."""
        if not self.stages:
            return NOTHING
        return "->".join(" x ".join(short_name(k) for k in st) for st in self.stages)


def short_name(path: str) -> str:
    return SHORT_NAMES.get(path, path.rsplit(".", 1)[-1])


def search_plans(cfg) -> list[SearchPlan]:
    """The config's plans, after the implicit all-inactive plan ``nothing``."""
    plans = [SearchPlan(())]
    for plan in cfg.evaluation.search:
        if plan and isinstance(plan[0], (tuple, list)):
            plans.append(SearchPlan(tuple(tuple(st) for st in plan)))
        else:
            plans.append(SearchPlan((tuple(plan),)))
    return plans


def config_value(cfg, path: str):
    """The config's value at a dotted parameter path, spelled as a grid lists it (None when the
    config does not set it, e.g. an absent ``dataset.params`` entry)."""
    node = cfg.to_dict()
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return float(a) == float(b)
    return a == b


@dataclass
class Grid:
    """The grid points of a config and how they relate to settings and plans.

    ``points[g]`` is the dict of grid values of point ``g`` (every grid key). ``setting_keys`` are
    the grid keys no plan names; ``searched_keys`` those some plan names, with their inactive
    ``base`` values. ``index[(setting, searched)]`` finds a point by its value tuples.
    """

    keys: list
    setting_keys: list
    searched_keys: list
    base: dict
    points: list
    plans: list
    index: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg) -> "Grid":
        grid = dict(cfg.evaluation.grid or {})
        keys = list(grid)
        plans = search_plans(cfg)
        searched = list(dict.fromkeys(k for p in plans for k in p.keys))
        if not searched:
            pts = [dict(zip(keys, vals)) for vals in itertools.product(*(grid[k] for k in keys))] or [{}]
            return cls(keys, keys, [], {}, pts, plans)
        settings = [k for k in keys if k not in searched]
        base = {k: config_value(cfg, k) for k in searched}
        points, index = [], {}

        def add(setting, values):
            sk = tuple(setting)
            vk = tuple(_key(values[k]) for k in searched)
            if (sk_key := (tuple(map(_key, sk)), vk)) in index:
                return
            index[sk_key] = len(points)
            p = dict(zip(settings, setting))
            p.update(values)
            points.append({k: p[k] for k in keys})

        for setting in itertools.product(*(grid[k] for k in settings)):
            add(setting, dict(base))
            for plan in plans[1:]:
                pk = plan.keys
                for vals in itertools.product(*(grid[k] for k in pk)):
                    v = dict(base)
                    v.update(zip(pk, vals))
                    add(setting, v)
        return cls(keys, settings, searched, base, points, plans, index)

    # -- lookups
    def setting_of(self, g: int) -> tuple:
        return tuple(self.points[g].get(k) for k in self.setting_keys)

    def settings(self) -> list[tuple]:
        """The distinct settings, in grid order."""
        return list(dict.fromkeys(self.setting_of(g) for g in range(len(self.points))))

    def base_point(self, setting: tuple) -> int:
        """The all-inactive point of a setting (its first point without plans)."""
        if self.searched_keys:
            return self.find(setting, self.base)
        return next(g for g in range(len(self.points)) if self.setting_of(g) == setting)

    def find(self, setting: tuple, values: dict):
        vk = tuple(_key(values[k]) for k in self.searched_keys)
        return self.index.get((tuple(map(_key, setting)), vk))

    def is_active(self, g: int, key: str) -> bool:
        return not _same(self.points[g].get(key), self.base.get(key))

    def candidates(self, setting: tuple, stage: tuple, current: dict, grid: dict):
        """Point indices of a stage's value product, the other searched keys as in ``current``,
        in the order the grid lists the values."""
        out = []
        for vals in itertools.product(*(grid[k] for k in stage)):
            v = dict(current)
            v.update(zip(stage, vals))
            g = self.find(setting, v)
            if g is not None:
                out.append(g)
        return out

    def values_text(self, g: int) -> str:
        """``tau=0.5;alpha=inf`` for the searched values of point g (what a selection chose)."""
        return ";".join(f"{short_name(k)}={_text(self.points[g].get(k), k)}" for k in self.searched_keys)

    def frame(self) -> pd.DataFrame:
        """One row per grid point: ``grid_point`` and one column per grid key (``grid.csv``)."""
        rows = [[g] + [_text(p.get(k), k) for k in self.keys] for g, p in enumerate(self.points)]
        return pd.DataFrame(rows, columns=["grid_point"] + self.keys)


def _key(v):
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return ("num", float(v))
    if isinstance(v, (list, tuple)):
        return tuple(map(_key, v))
    return ("obj", v)


def _text(v, path: str = "") -> str:
    """A grid value as text: ``0.125``, ``sonar``; an unbounded alpha_bound (null) is ``inf``."""
    if v is None:
        return "inf" if path.endswith("alpha_bound") else "null"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def setting_label(grid: Grid, setting: tuple) -> dict:
    return {k: _text(v, k) for k, v in zip(grid.setting_keys, setting)}


# ----------------------------------------------------------------------------- reading results


def _errors(df: pd.DataFrame, epoch: str) -> pd.DataFrame:
    """Multiclass test-error rows of one epoch, value as float, with integer fold columns."""
    m = (df["metric"] == "test_error_pct") & (df["class"] == "all") & (df["epoch"] == epoch)
    if "search" in df.columns:
        m &= df["search"] == ""
    d = df.loc[m, ["grid_point", "fold", "permutation", "rule", "normalized", "value"]
               + (["inner_fold"] if "inner_fold" in df.columns else [])].copy()
    d["value"] = d["value"].astype(float)
    for c in ("grid_point", "fold", "permutation") + (("inner_fold",) if "inner_fold" in d else ()):
        d[c] = d[c].astype(int)
    if "inner_fold" not in d:
        d["inner_fold"] = -1
    return d


def final_epoch(cfg) -> str:
    return f"{float(cfg.training.epochs):g}"


def _rule_pairs(d: pd.DataFrame):
    return sorted(set(zip(d["rule"], d["normalized"])), key=lambda rn: (rn[1], rn[0]))


# ----------------------------------------------------------------------------- parameter search


SUMMARY_COLUMNS = ["search", "rule", "normalized", "epoch", "accuracy_pct", "sd_pct", "ci_pct", "n_runs",
                   "grid_point", "chosen", "n_candidates"]


def _accuracies_by_point(d: pd.DataFrame) -> dict:
    """``{(grid_point, rule, normalized): 100 - test error of each run, in (fold, permutation)
    order}`` of :func:`_errors` rows: one sort of them all, then each key's run of rows (a sort
    per key cost seconds on grids of thousands of points). Rows with a missing key are left out,
    as a pandas groupby leaves them."""
    keys = ["grid_point", "rule", "normalized"]
    d = d.dropna(subset=keys).sort_values(keys + ["fold", "permutation"], kind="mergesort")
    if not len(d):
        return {}
    vals = 100.0 - d["value"].to_numpy(dtype=float)
    g, r, nz = (d[k].to_numpy() for k in keys)
    starts = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (r[1:] != r[:-1]) | (nz[1:] != nz[:-1])])
    ends = np.r_[starts[1:], len(d)]
    return {(int(g[a]), r[a], nz[a]): vals[a:b] for a, b in zip(starts, ends)}


def search_summary(df: pd.DataFrame, grid: Grid, cfg, epoch: str | None = None) -> pd.DataFrame:
    """Parameter search (Tables 3-4): per setting, plan and rule, the best mean accuracy over the
    plan's points with every plan parameter active, and the all-inactive point for ``nothing``.

    Accuracies are 100 - test error, averaged over the runs (fold x permutation) of a point; sd is
    the maximum-likelihood standard deviation over runs and ci the T-interval half-width
    (:func:`t_interval`) of the best point. ``chosen`` names the best point's searched values
    (the first one listed on ties).
    """
    epoch = epoch or final_epoch(cfg)
    d = _errors(df, epoch)
    d = d[d["inner_fold"] == -1]
    runs = _accuracies_by_point(d)
    acc = {key: float(vals.mean()) for key, vals in runs.items()}
    conf = cfg.evaluation.confidence
    out = []
    gvals = dict(cfg.evaluation.grid)
    pairs = _rule_pairs(d)
    for s in grid.settings():
        base_g = grid.base_point(s)
        for plan in grid.plans:
            if plan.stages:
                cands = grid.candidates(s, plan.keys, grid.base, gvals)
                cands = [g for g in cands if all(grid.is_active(g, k) for k in plan.keys)]
            else:
                cands = [base_g]
            for r, nz in pairs:
                best, best_acc = None, -math.inf
                for g in cands:
                    a = acc.get((g, r, nz))
                    if a is not None and a > best_acc + TIE_TOL_PP:
                        best, best_acc = g, a
                row = setting_label(grid, s)
                if best is None:
                    row.update(dict(search=plan.label, rule=r, normalized=nz, epoch=epoch, accuracy_pct=math.nan,
                                    sd_pct=math.nan, ci_pct=math.nan, n_runs=0, grid_point=-1, chosen="",
                                    n_candidates=len(cands)))
                else:
                    mean, sd, ci = t_interval(runs[(best, r, nz)], conf)
                    row.update(dict(search=plan.label, rule=r, normalized=nz, epoch=epoch, accuracy_pct=mean,
                                    sd_pct=sd, ci_pct=ci, n_runs=len(runs[(best, r, nz)]), grid_point=best,
                                    chosen=grid.values_text(best), n_candidates=len(cands)))
                out.append(row)
    return pd.DataFrame(out, columns=grid.setting_keys + SUMMARY_COLUMNS)


# ----------------------------------------------------------------------------- nested CV


@dataclass(frozen=True)
class Selection:
    """The point a plan chose for one setting, outer fold and rule, and its inner-CV error."""

    plan: str
    setting: tuple
    fold: int
    rule: str
    normalized: str
    grid_point: int
    inner_error: float


def select_nested(df: pd.DataFrame, grid: Grid, cfg, epoch: str | None = None) -> list[Selection]:
    """Parameter optimization: for every setting, outer fold, rule and plan, the grid point chosen
    from the inner folds' results alone.

    A stage's candidates are its value product (inactive values included), the other searched
    parameters at their current values (inactive, or chosen by an earlier stage); the candidate
    with the lowest mean inner test error (over inner folds and permutations) wins, the first one
    listed on ties. Only rows with ``inner_fold >= 0`` are read: the outer test fold's results
    never enter a choice.
    """
    epoch = epoch or final_epoch(cfg)
    d = _errors(df, epoch)
    inner = d[d["inner_fold"] >= 0]
    err = inner.groupby(["fold", "rule", "normalized", "grid_point"], sort=True)["value"].mean().to_dict()
    folds = sorted(set(inner["fold"]))
    gvals = dict(cfg.evaluation.grid)
    pairs = _rule_pairs(inner)
    out = []
    for s in grid.settings():
        for k in folds:
            for r, nz in pairs:
                for plan in grid.plans:
                    current = dict(grid.base)
                    for stage in plan.stages:
                        best, best_err = None, math.inf
                        for g in grid.candidates(s, stage, current, gvals):
                            e = err.get((k, r, nz, g))
                            if e is not None and e < best_err - TIE_TOL_PP:
                                best, best_err = g, e
                        if best is None:
                            break
                        current.update({key: grid.points[best][key] for key in stage})
                    g = grid.find(s, current)
                    if g is None:
                        continue
                    out.append(Selection(plan.label, s, k, r, nz, g, err.get((k, r, nz, g), math.nan)))
    return out


def selection_rows(df: pd.DataFrame, selections, columns, float_format: str, epoch: str):
    """Rows of the results contract for nested CV selections: for each selection and
    permutation, the chosen point's outer-fold ``test_error_pct`` and its ``inner_cv_error_pct``,
    tagged with the plan in column ``search``."""
    m = (df["metric"] == "test_error_pct") & (df["class"] == "all") & (df["epoch"] == epoch) \
        & (df["inner_fold"] == "-1") & (df["search"] == "")
    outer = df.loc[m]
    by_key = {}
    for row in outer.itertuples(index=False):
        by_key.setdefault((int(row.grid_point), int(row.fold), row.rule, row.normalized), []).append(row)
    rows = []
    ci = columns.index
    for sel in selections:
        for row in by_key.get((sel.grid_point, sel.fold, sel.rule, sel.normalized), []):
            base = list(row)
            base[ci("search")] = sel.plan
            rows.append(base)
            inner = list(base)
            inner[ci("metric")] = "inner_cv_error_pct"
            inner[ci("value")] = float_format % sel.inner_error
            rows.append(inner)
    return rows


def nested_summary(df: pd.DataFrame, grid: Grid, cfg, epoch: str | None = None) -> pd.DataFrame:
    """Parameter optimization table (Tables 6-7): per setting, plan and rule, the mean outer-fold
    accuracy of the selected points, the ML sd over outer folds, the T-interval half-width and
    how often each point was chosen (``choices``, e.g. ``tau=0.5 x7; tau=1 x3``)."""
    epoch = epoch or final_epoch(cfg)
    m = (df["search"] != "") & (df["metric"] == "test_error_pct") & (df["epoch"] == epoch)
    d = df.loc[m].copy()
    d["value"] = d["value"].astype(float)
    d["grid_point"] = d["grid_point"].astype(int)
    d["fold"] = d["fold"].astype(int)
    d["permutation"] = d["permutation"].astype(int)
    conf = cfg.evaluation.confidence
    out = []
    for (g0, plan, r, nz), part in _group_by_setting(d, grid, ["search", "rule", "normalized"]):
        part = part.sort_values(["fold", "permutation"])
        # one value per outer fold: the mean over permutations
        per_fold = part.groupby("fold", sort=True)["value"].mean()
        mean, sd, ci = t_interval(100.0 - per_fold.to_numpy(), conf)
        chosen = part.drop_duplicates("fold")["grid_point"].tolist()
        counts = {}
        for g in chosen:
            counts[g] = counts.get(g, 0) + 1
        choices = "; ".join(f"{grid.values_text(g)} x{c}" for g, c in counts.items())
        row = setting_label(grid, g0)
        row.update(dict(search=plan, rule=r, normalized=nz, epoch=epoch, accuracy_pct=mean, sd_pct=sd,
                        ci_pct=ci, n_folds=int(per_fold.size), choices=choices))
        out.append(row)
    cols = grid.setting_keys + ["search", "rule", "normalized", "epoch", "accuracy_pct", "sd_pct", "ci_pct",
                                "n_folds", "choices"]
    return pd.DataFrame(out, columns=cols)


def _group_by_setting(d: pd.DataFrame, grid: Grid, by):
    """Groups of ``d`` by (setting of the row's grid point, *by), settings in grid order."""
    settings = [grid.setting_of(int(g)) for g in d["grid_point"]]
    order = grid.settings()
    sidx = {s: i for i, s in enumerate(order)}
    d = d.assign(_s=[sidx[s] for s in settings])
    plan_order = {p.label: i for i, p in enumerate(grid.plans)}
    keys = sorted(set(zip(d["_s"], *(d[b] for b in by))),
                  key=lambda t: (t[0], plan_order.get(t[1], 99)) + tuple(t[2:]))
    groups = {k: part for k, part in d.groupby(["_s"] + list(by), sort=False)}
    for k in keys:
        yield (order[k[0]],) + tuple(k[1:]), groups[k]
