"""The budget study (``results/budget/``): kernel perceptrons on a memory budget, and NORMA, next to
the unbudgeted kernel perceptron and to the approximation a practitioner would pick instead.

Each panel is a data set with two configs (``configs/budget/<panel>.yaml`` and
``<panel>_perceptron.yaml``), run like any other (``plab run``): the budgeted algorithms on a grid
of budgets (support vectors per label) with the rules last and avg, and the unbudgeted perceptron
in the same training order with last, avg and the vote. On top of those runs this module

* trains the practical peer on the same data and order: ``sklearn.kernel_approximation.Nystroem``
  with as many components as the budget (the same kernel, components shared by the labels), then
  our linear perceptron (rules last, avg, vote) and scikit-learn's averaged SGD perceptron
  (``SGDClassifier(loss="perceptron", average=True)``, one pass, no shuffling);
* trains each budgeted algorithm once more at :data:`CURVE_BUDGET` to record its online mistakes
  against the examples seen (and the perceptron's);
* writes ``summary.csv`` (every method, budget and rule: test error, training seconds, support
  vectors), the figures and ``summary.md``, which the report includes.

``make reproduce SET=budget`` (``python -m perceptron_lab.cli.reproduce --set budget``) runs it all;
``python -m perceptron_lab.studies.budget`` redraws the study from finished runs.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ALGORITHMS = ("stoptron", "rbp", "forgetron", "projectron", "projectron++", "norma")
NAMES = {"stoptron": "Stoptron", "rbp": "RBP", "forgetron": "Forgetron", "projectron": "Projectron",
         "projectron++": "Projectron++", "norma": "NORMA", "perceptron": "perceptron (unbudgeted)",
         "nystroem_perceptron": "Nyström + perceptron", "nystroem_sgd": "Nyström + averaged SGD"}
BUDGETS = (100, 200, 500, 1000, 2000, 5000)
#: The budget of the online-mistakes curves.
CURVE_BUDGET = 100
#: "Within reach of the unbudgeted voted perceptron": at most this many points of test error above it.
REACH_POINTS = 0.5
STUDY_DIR = "budget"


@dataclass(frozen=True)
class Panel:
    name: str
    title: str

    @property
    def budgeted(self) -> str:
        return f"budget/{self.name}"

    @property
    def perceptron(self) -> str:
        return f"budget/{self.name}_perceptron"


PANELS = (Panel("mnist_d4", "MNIST, (1 + x.y)^4 on unit-length images"),
          Panel("usps", "USPS, Gaussian kernel sigma = 5"),
          Panel("adult", "Adult, Gaussian kernel sigma = 2.24"))


def configs() -> list[str]:
    """The study's configs, in the order ``make reproduce SET=budget`` runs them."""
    return [c for p in PANELS for c in (p.perceptron, p.budgeted)]


# ----------------------------------------------------------------------------- the runs' results


def _read_csv_checked(path: Path) -> pd.DataFrame:
    """A CSV the study wrote, validated first (:func:`perceptron_lab.run.store.read_back_csv`)."""
    from perceptron_lab.run.store import read_back_csv

    read_back_csv(path, fix=f"move {path} away and write the study again with training")
    return pd.read_csv(path)


def _run_rows(run_dir: Path, panel: str, method_of) -> list[dict]:
    """Rows of one finished run folder: per grid point, the multiclass test error of each rule at the
    last checkpoint, its training seconds and its support vectors and mistakes (totals over labels)."""
    from perceptron_lab.run.store import read_back_csv, read_back_json, read_back_results

    read_back_results(run_dir / "results.csv", ["class", "epoch", "rule", "metric", "value"])  # damaged: stop
    res = pd.read_csv(run_dir / "results.csv", dtype={"class": str})
    timings = read_back_json(run_dir / "timings.json")
    grid = None
    if (run_dir / "grid.csv").exists():
        read_back_csv(run_dir / "grid.csv")
        grid = pd.read_csv(run_dir / "grid.csv")
    last_epoch = res["epoch"].max()
    res = res[(res["epoch"] == last_epoch) & (res["class"] == "all")]
    rows = []
    for gp, g in res.groupby("grid_point"):
        values = {} if grid is None else grid.set_index("grid_point").loc[gp].to_dict()
        method, budget = method_of(values)
        unit = next(t for k, t in timings.items() if k.startswith(f"g{int(gp):03d}_"))
        counts = g[g["metric"].isin(["mistakes", "support_vectors"])].set_index("metric")["value"]
        for _, r in g[g["metric"] == "test_error_pct"].iterrows():
            rows.append({"panel": panel, "method": method, "budget": budget, "rule": r["rule"],
                         "test_error_pct": float(r["value"]), "train_seconds": float(unit["train_seconds"]),
                         "support_vectors": float(counts.get("support_vectors", np.nan)),
                         "mistakes": float(counts.get("mistakes", np.nan))})
    return rows


def _budget(value) -> float:
    """A grid's ``algorithm.budget`` as the study's budget axis: ``null`` (grid.csv: empty) is no
    limit, the "unbounded" column, so a sweep may hold the unbudgeted runs beside the budgeted ones
    (``algorithm.budget: [100, ..., null]``; the Stoptron without a budget is the kernel perceptron)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return math.inf
    return float(value)


def coinciding_rows(df: pd.DataFrame, panel: str) -> list[tuple[str, str]]:
    """Pairs of budgeted methods of ``panel`` whose test errors are equal at every budget and rule
    both ran: (the later method in :data:`ALGORITHMS`, the earlier one it repeats)."""
    d = df[(df["panel"] == panel) & df["method"].isin(ALGORITHMS)]
    table = {m: g.set_index(["budget", "rule"])["test_error_pct"] for m, g in d.groupby("method")}
    out = []
    for i, a in enumerate(ALGORITHMS):
        for b in ALGORITHMS[i + 1:]:
            if a in table and b in table:
                both = table[a].index.intersection(table[b].index)
                if len(both) and np.array_equal(table[a].loc[both].to_numpy(), table[b].loc[both].to_numpy()):
                    out.append((b, a))
    return out


#: Why two methods' rows coincide, where the algorithms say why (Orabona, Keshet & Caputo 2009).
WHY_EQUAL = {
    ("projectron++", "projectron"):
        "a margin update of Projectron++ needs the example within eta (1 - y f(x)) < eta of the span of the "
        "support set (Figure 2: beta > 0 only when 1 - y f(x) > delta / eta), and on this panel no margin "
        "error came that close, so it made exactly the Projectron's updates",
    ("projectron", "stoptron"):
        "the Projectron projects a mistake only when it lies within eta of the span of the support set or the "
        "set is full; no mistake came that close, so until the budget fills it is the kernel perceptron, as the "
        "Stoptron is",
    ("projectron++", "stoptron"):
        "neither a projection nor a margin update happened (see the two lines above), so it made the kernel "
        "perceptron's updates",
}


def coincidence_lines(df: pd.DataFrame, panel: str) -> list[str]:
    """One sentence per pair of :func:`coinciding_rows`: which rows repeat which, and why."""
    return [f"{NAMES[later]} equals {NAMES[earlier]} at every budget: "
            f"{WHY_EQUAL.get((later, earlier), 'their updates were the same on this panel')}."
            for later, earlier in coinciding_rows(df, panel)]


def collect_runs(results_dir) -> pd.DataFrame:
    """The study's rows from the finished config runs under ``results_dir`` (missing ones skipped)."""
    base = Path(results_dir) / STUDY_DIR
    rows = []
    for p in PANELS:
        if (base / f"{p.name}_perceptron" / "results.csv").exists():
            rows += _run_rows(base / f"{p.name}_perceptron", p.name, lambda v: ("perceptron", math.inf))
        if (base / p.name / "results.csv").exists():
            rows += _run_rows(base / p.name, p.name, lambda v: (v["algorithm.name"], _budget(v["algorithm.budget"])))
    return pd.DataFrame(rows, columns=["panel", "method", "budget", "rule", "test_error_pct", "train_seconds",
                                       "support_vectors", "mistakes"])


# ----------------------------------------------------------------------------- data as a run sees it


def panel_data(config: str, data_dir=None):
    """(config, dataset, Xtr, ytr, Xte, yte, order, kernel, seed) of a study config's single holdout
    unit, exactly as ``plab run`` builds them: the same rows, preprocessing, training order, budgeted
    kernel and seed (the RBP's removals)."""
    from perceptron_lab.config.load import load_config
    from perceptron_lab.engine.budget import unit_diag_kernel
    from perceptron_lab.engine.intercept import intercept_kernel
    from perceptron_lab.config.overrides import resolve_config
    from perceptron_lab.run.inputs import load_data
    from perceptron_lab.run.plan import plan_units as plan
    from perceptron_lab.run.spec import unit_spec
    from perceptron_lab.run.units import unit_data, unit_design, unit_order

    cfg = load_config(resolve_config(config))
    spec = unit_spec(cfg)
    ds = load_data(cfg, data_dir)
    unit = plan(cfg, ds.X_test is not None)[0]
    Xtr, ytr, Xte, yte = unit_data(spec, ds, unit)
    Xtr, Xte = unit_design(spec, Xtr, Xte)
    Xtr, Xte = np.ascontiguousarray(Xtr, dtype=np.float64), np.ascontiguousarray(Xte, dtype=np.float64)
    order, seed = unit_order(spec, unit, len(ytr))
    kernel = unit_diag_kernel(intercept_kernel(spec.kernel, spec.fit_intercept), Xtr)
    return cfg, ds, Xtr, ytr, Xte, yte, order, kernel, seed


def sklearn_kernel(kernel) -> dict:
    """The keyword arguments of ``Nystroem`` for the same kernel function (up to the constant factor a
    budgeted run divides by, which is kept): poly ``((1 + x.y/s) / c)^d`` is scikit-learn's
    ``(gamma x.y + coef0)^degree`` with gamma = 1 / (s c), coef0 = 1 / c; Gaussian is ``rbf`` with
    gamma = 1 / (2 sigma^2); linear is ``linear``."""
    if kernel.name == "poly":
        c = float(kernel.base_div)
        return {"kernel": "poly", "degree": int(kernel.degree), "gamma": 1.0 / (kernel.scale * c), "coef0": 1.0 / c}
    if kernel.name == "gaussian":
        return {"kernel": "rbf", "gamma": 1.0 / (2.0 * kernel.sigma**2)}
    if kernel.name == "linear":
        return {"kernel": "linear"}
    raise ValueError(f"no scikit-learn kernel for {kernel.describe()}")


# ----------------------------------------------------------------------------- the practical peer


def nystroem_rows(panel: Panel, data_dir=None, budgets=BUDGETS, seed: int = 0, progress=None) -> list[dict]:
    """Nyström features with ``budget`` components (drawn with ``seed``), then (a) our linear
    perceptron over the config's training order, rules last, avg and vote (survival weights), and (b)
    scikit-learn's averaged SGD perceptron over the same order, one pass. Training seconds include
    the Nyström fit and the transform of the training rows."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import SGDClassifier

    from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
    from perceptron_lab.engine.kernels import Kernel
    from perceptron_lab.model.predict import RULES, evaluate

    cfg, ds, Xtr, ytr, Xte, yte, order, kernel, _ = panel_data(panel.perceptron, data_dir)
    n_classes = len(ds.classes)
    binary = n_classes == 2
    rows = []
    for B in budgets:
        if B >= len(ytr):
            continue
        t0 = time.perf_counter()
        ny = Nystroem(n_components=int(B), random_state=seed, **sklearn_kernel(kernel))
        Ftr = ny.fit_transform(Xtr)
        t_feat = time.perf_counter() - t0
        Fte = ny.transform(Xte)
        t1 = time.perf_counter()
        log = train(Ftr, label_matrix(ytr, n_classes), Kernel("linear"), PerceptronParams(), order, 1.0, [1.0])
        t_perc = time.perf_counter() - t1
        rules = ("last", "avg", "vote")
        err, _ = evaluate(log, Kernel("linear"), Ftr, Fte, yte, binary, vote_weight="survival", rules=rules)
        common = {"panel": panel.name, "budget": float(B), "support_vectors": float(B)}
        for r in rules:
            rows.append(dict(common, method="nystroem_perceptron", rule=r,
                             test_error_pct=100.0 * err[-1, RULES.index(r)] / len(yte),
                             train_seconds=t_feat + t_perc, mistakes=float(log.n_updates)))
        t2 = time.perf_counter()
        sgd = SGDClassifier(loss="perceptron", penalty=None, learning_rate="constant", eta0=1.0, average=True,
                            shuffle=False, max_iter=1, tol=None, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sgd.fit(Ftr[order], ytr[order])
        t_sgd = time.perf_counter() - t2
        pred = sgd.predict(Fte)
        rows.append(dict(common, method="nystroem_sgd", rule="avg", test_error_pct=100.0 * np.mean(pred != yte),
                         train_seconds=t_feat + t_sgd, mistakes=np.nan))
        if progress:
            progress(f"{panel.name}: Nyström, {B} components: {time.perf_counter() - t0:.1f} s")
    return rows


# ----------------------------------------------------------------------------- online mistakes


def mistake_curves(panel: Panel, data_dir=None, budget: int = CURVE_BUDGET, points: int = 60) -> pd.DataFrame:
    """Online mistakes (summed over the labels) against examples seen, one pass in the config's
    order: every budgeted algorithm at ``budget`` per label, and the unbudgeted perceptron."""
    from perceptron_lab.config.load import with_overrides
    from perceptron_lab.engine.budget import EV_MISTAKE, train_budget
    from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, train
    from perceptron_lab.run.spec import unit_spec

    cfg, ds, Xtr, ytr, _, _, order, kernel, seed = panel_data(panel.budgeted, data_dir)
    Y = label_matrix(ytr, len(ds.classes))
    n = len(ytr)
    seen = np.unique(np.linspace(0, n, points + 1).astype(np.int64))
    out = {"examples_seen": seen}
    log = train(Xtr, Y, kernel, PerceptronParams(), order, 1.0, [1.0])
    out["perceptron"] = np.searchsorted(np.sort(log.upd_step), seen, side="left")
    for alg in ALGORITHMS:
        spec = unit_spec(with_overrides(cfg, {"algorithm.name": alg, "algorithm.budget": int(budget)}))
        blog = train_budget(Xtr, Y, kernel, spec.settings.params(seed), order, 1.0, [1.0],
                            chunk_size=spec.chunk_size)
        steps = np.sort(blog.ev_step[blog.ev_kind == EV_MISTAKE])
        out[alg] = np.searchsorted(steps, seen, side="left")
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- figures and summary


def _style(method: str) -> dict:
    from perceptron_lab.run.figures import algorithm_style

    return algorithm_style(method)


def plot_error(df: pd.DataFrame, out: Path, rule: str = "avg") -> Path:
    """Test error against budget, one panel per data set: each budgeted algorithm and the Nyström
    peers (rule ``rule``; SGD is averaged), the unbudgeted perceptron's rules as horizontal lines."""
    from perceptron_lab.run.figures import _figure, fit_ylim, log_axis, rule_style, save_figure

    panels = [p for p in PANELS if (df["panel"] == p.name).any()]
    fig = _figure(5.0 * len(panels), 5.2)
    for k, p in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        d = df[df["panel"] == p.name]
        drawn = []
        for m in list(ALGORITHMS) + ["nystroem_perceptron", "nystroem_sgd"]:
            r = "avg" if m == "nystroem_sgd" else rule
            s = d[(d["method"] == m) & (d["rule"] == r)].sort_values("budget")
            if len(s):
                ax.plot(s["budget"], s["test_error_pct"], label=f"{NAMES[m]} ({r})", **_style(m))
                drawn += list(s["test_error_pct"])
        for r in ("vote", "last"):
            v = d[(d["method"] == "perceptron") & (d["rule"] == r)]["test_error_pct"]
            if len(v):
                ax.axhline(float(v.iloc[0]), color="k", ls=rule_style(r)["ls"], lw=1,
                           label=f"unbudgeted perceptron ({r})")
                drawn.append(float(v.iloc[0]))
        fit_ylim(ax, drawn, ceiling=100.0)
        log_axis(ax.xaxis, d.loc[np.isfinite(d["budget"].astype(float)), "budget"].astype(float))
        ax.set_xlabel("budget (support vectors per label; Nyström: components)")
        ax.set_ylabel("test error (%)")
        ax.set_title(p.title, fontsize=9)
        ax.grid(True, alpha=0.3)
    path = out / f"error_vs_budget_{rule}.png"
    _shared_legend(fig)
    save_figure(fig, path)
    return path


def _shared_legend(fig, ncol: int = 5) -> None:
    """One legend below the panels for every line drawn in any of them."""
    from perceptron_lab.run.figures import legend_outside

    legend_outside(fig, where="below", ncol=ncol, fontsize=7)


def plot_seconds(df: pd.DataFrame, out: Path) -> Path:
    """Training seconds (one unit, as ``plab run`` timed it) against budget, per data set."""
    from perceptron_lab.run.figures import _figure, log_axis, save_figure

    panels = [p for p in PANELS if (df["panel"] == p.name).any()]
    fig = _figure(5.0 * len(panels), 5.0)
    for k, p in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), k + 1)
        d = df[(df["panel"] == p.name) & (df["rule"].isin(["avg"]))]
        for m in list(ALGORITHMS) + ["nystroem_perceptron", "nystroem_sgd"]:
            s = d[d["method"] == m].sort_values("budget")
            if len(s):
                ax.plot(s["budget"], s["train_seconds"], label=NAMES[m], **_style(m))
        v = d[d["method"] == "perceptron"]["train_seconds"]
        if len(v):
            ax.axhline(float(v.iloc[0]), color="k", lw=1, label=NAMES["perceptron"])
        log_axis(ax.xaxis, d.loc[np.isfinite(d["budget"].astype(float)), "budget"].astype(float))
        log_axis(ax.yaxis)
        ax.set_xlabel("budget (support vectors per label; Nyström: components)")
        ax.set_ylabel("training seconds (one pass)")
        ax.set_title(p.title, fontsize=9)
        ax.grid(True, alpha=0.3)
    path = out / "seconds_vs_budget.png"
    _shared_legend(fig)
    save_figure(fig, path)
    return path


def plot_mistakes(curves: dict, out: Path) -> Path:
    """Online mistakes (summed over labels) against examples seen, per data set."""
    from perceptron_lab.run.figures import _figure, algorithm_style, save_figure

    fig = _figure(5.0 * len(curves), 4.8)
    for k, (name, c) in enumerate(curves.items()):
        ax = fig.add_subplot(1, len(curves), k + 1)
        for m in list(ALGORITHMS) + ["perceptron"]:
            if m in c:
                kw = dict(algorithm_style(m), lw=1.2) if m == "perceptron" else dict(_style(m), markevery=6, ms=4)
                label = NAMES[m] if m == "perceptron" else f"{NAMES[m]} (budget {CURVE_BUDGET})"
                ax.plot(c["examples_seen"], c[m], label=label, **kw)
        ax.set_xlabel("examples seen (one pass)")
        ax.set_ylabel("online mistakes (sum over labels)")
        ax.set_title(next(p.title for p in PANELS if p.name == name), fontsize=9)
        ax.grid(True, alpha=0.3)
    path = out / "mistakes_vs_examples.png"
    _shared_legend(fig, ncol=4)
    save_figure(fig, path)
    return path


def reach_table(df: pd.DataFrame, panel: str) -> pd.DataFrame:
    """Per method and rule: the smallest budget whose test error is within :data:`REACH_POINTS` of
    the unbudgeted voted perceptron's (None: no budget tried reaches it)."""
    d = df[df["panel"] == panel]
    ref = d[(d["method"] == "perceptron") & (d["rule"] == "vote")]["test_error_pct"]
    if ref.empty:
        return pd.DataFrame()
    ref = float(ref.iloc[0])
    rows = []
    for (m, r), g in d[d["method"] != "perceptron"].groupby(["method", "rule"], sort=False):
        ok = g[g["test_error_pct"] <= ref + REACH_POINTS + 1e-9].sort_values("budget")
        rows.append({"method": NAMES[m], "rule": r,
                     "smallest budget within 0.5 points": int(ok["budget"].iloc[0]) if len(ok) else "none tried"})
    return pd.DataFrame(rows)


def error_table(df: pd.DataFrame, panel: str) -> pd.DataFrame:
    """Test error (%) per method and rule (rows) against budget (columns), "unbounded" last."""
    d = df[df["panel"] == panel].copy()
    d["budget"] = d["budget"].map(lambda b: "unbounded" if math.isinf(b) else str(int(b)))
    d["method"] = d["method"].map(NAMES)
    t = d.pivot_table(index=["method", "rule"], columns="budget", values="test_error_pct", sort=False)
    cols = [str(b) for b in BUDGETS if str(b) in t.columns] + (["unbounded"] if "unbounded" in t.columns else [])
    return t[cols].round(2).reset_index()


def summary_markdown(df: pd.DataFrame, figures: list[Path], out: Path) -> str:
    lines = ["# Kernel perceptrons on a memory budget", "",
             "One pass over each training set in one seeded order; budgets are support vectors per label "
             "(one-vs-rest); Nyström uses as many components, shared by the labels. Test error in %. "
             f"Rows: method and prediction rule. Reach: the smallest budget within {REACH_POINTS:g} points of "
             "the unbudgeted voted perceptron. Training seconds (`summary.csv`, `seconds_vs_budget.png`): one "
             "unit as `plab run --jobs 2` timed it (`timings.json`: two units at a time on the machine's cores), "
             "the Nyström peer's including its fit and transform. Configs: `configs/budget/`; module: "
             "`perceptron_lab.studies.budget`.", ""]
    for p in PANELS:
        if not (df["panel"] == p.name).any():
            continue
        lines += [f"## {p.title}", "", _md(error_table(df, p.name)), ""]
        reach = reach_table(df, p.name)
        if not reach.empty:
            lines += ["Reach:", "", _md(reach), ""]
        same = coincidence_lines(df, p.name)
        if same:
            lines += ["Rows that coincide:", ""] + [f"- {line}" for line in same] + [""]
    for f in figures:
        lines += [f"![{f.stem}]({f.relative_to(out).as_posix()})", ""]
    return "\n".join(lines)


def _md(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    body = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        body.append("| " + " | ".join("" if (isinstance(v, float) and math.isnan(v)) else str(v)
                                      for v in r.values) + " |")
    return "\n".join(body)


def _run_hash(results_dir, config: str) -> str | None:
    """The config hash recorded by the finished run of a study config (None if it has not run)."""
    info = Path(results_dir) / STUDY_DIR / config.split("/", 1)[1] / "run.json"
    from perceptron_lab.run.store import read_back_json

    return read_back_json(info).get("config_hash") if info.exists() else None


def _check_trained_for(path: Path, want: dict) -> None:
    """Refuse a Nyström or mistake-curve CSV trained for other runs than the ones now in place
    (``want``: panel -> the config hash it must carry)."""
    from perceptron_lab.errors import OutputError

    from perceptron_lab.run.store import read_back_csv

    read_back_csv(path, ["panel", "config_hash"], fix=f"move {path} away and write the study again with training")
    df = pd.read_csv(path, dtype={"config_hash": str})
    have = dict(zip(df["panel"], df["config_hash"])) if "panel" in df else {}
    stale = [p for p, h in want.items() if have.get(p) != h]
    if stale:
        raise OutputError(f"{path} was trained for other runs of {', '.join(stale)} than those under "
                          f"{path.parent}; write the study again with training (without --no-train)")


def write_study(results_dir="results", data_dir=None, train: bool = True, progress=print) -> list[Path]:
    """The study's outputs under ``results_dir/budget/`` from the finished config runs: with
    ``train``, the Nyström peer and the mistake curves are trained (else read from their CSVs,
    which must carry the config hashes of the runs now in place)."""
    from perceptron_lab.run.store import atomic_write_text

    out = Path(results_dir) / STUDY_DIR
    out.mkdir(parents=True, exist_ok=True)
    runs = collect_runs(results_dir)
    panels = [p for p in PANELS if (runs["panel"] == p.name).any()]
    ny_path, curve_paths = out / "nystroem.csv", {p.name: out / f"mistakes_{p.name}.csv" for p in panels}
    # the trained parts take the data, order and kernel of the panels' perceptron / budgeted configs
    ny_hash = {p.name: _run_hash(results_dir, p.perceptron) for p in panels}
    curve_hash = {p.name: _run_hash(results_dir, p.budgeted) for p in panels}
    if train:
        ny = pd.DataFrame([dict(r, config_hash=ny_hash[p.name])
                           for p in panels for r in nystroem_rows(p, data_dir, progress=progress)])
        atomic_write_text(ny_path, ny.to_csv(index=False))
        for p in panels:
            t0 = time.perf_counter()
            curves = mistake_curves(p, data_dir).assign(panel=p.name, config_hash=curve_hash[p.name])
            atomic_write_text(curve_paths[p.name], curves.to_csv(index=False))
            if progress:
                progress(f"{p.name}: mistake curves, {time.perf_counter() - t0:.1f} s")
    if ny_path.exists():
        _check_trained_for(ny_path, {p: h for p, h in ny_hash.items() if h})
    for name, path in curve_paths.items():
        if path.exists() and curve_hash[name]:
            _check_trained_for(path, {name: curve_hash[name]})
    ny = _read_csv_checked(ny_path).drop(columns=["config_hash"], errors="ignore") if ny_path.exists() \
        else pd.DataFrame(columns=runs.columns)
    df = pd.concat([runs, ny], ignore_index=True)
    atomic_write_text(out / "summary.csv", df.to_csv(index=False))
    curves = {n: _read_csv_checked(p).drop(columns=["panel", "config_hash"], errors="ignore")
              for n, p in curve_paths.items() if p.exists()}
    figures = [plot_error(df, out, "avg"), plot_error(df, out, "last"), plot_seconds(df, out)]
    if curves:
        figures.append(plot_mistakes(curves, out))
    md = out / "summary.md"
    atomic_write_text(md, summary_markdown(df, figures, out))
    return [out / "summary.csv", md] + figures


def report_items(results_dir) -> list[tuple]:
    """The study's section of the report (items as :func:`perceptron_lab.report.tables.build` takes them),
    or [] when it has not been run."""
    out = Path(results_dir) / STUDY_DIR
    if not (out / "summary.csv").exists():
        return []
    from perceptron_lab.run.store import read_back_csv

    read_back_csv(out / "summary.csv", ["panel"])   # damaged: DamagedFileError, which the report shows
    df = pd.read_csv(out / "summary.csv")
    items = [("h2", "Beyond the papers: kernel perceptrons on a memory budget"),
             ("p", "Stoptron, randomized budget perceptron, self-tuned Forgetron, Projectron, Projectron++ and "
                   "NORMA at budgets of 100 to 5000 support vectors per label, one pass, against the unbudgeted "
                   "perceptron in the same order and Nyström features with as many components followed by a "
                   f"linear or averaged SGD perceptron. Test error in %. Source: `{out}` (summary.md).")]
    for p in PANELS:
        if (df["panel"] == p.name).any():
            items += [("h3", p.title), ("table", error_table(df, p.name))]
            reach = reach_table(df, p.name)
            if not reach.empty:
                items += [("p", f"Smallest budget within {REACH_POINTS:g} points of the unbudgeted voted perceptron:"),
                          ("table", reach)]
            items += [("p", line) for line in coincidence_lines(df, p.name)]
    for name in ("error_vs_budget_avg", "error_vs_budget_last", "seconds_vs_budget", "mistakes_vs_examples"):
        if (out / f"{name}.png").exists():
            items.append(("img", out / f"{name}.png"))
    return items


def main(argv=None) -> None:
    import argparse
    import os

    ap = argparse.ArgumentParser(description="Write the budget study from finished runs under RESULTS/budget/.")
    ap.add_argument("results", nargs="?", default="results")
    ap.add_argument("--data-dir", default=os.environ.get("PLAB_DATA"))
    ap.add_argument("--no-train", action="store_true", help="do not train the Nyström peer and the mistake curves "
                                                            "again; read their CSVs")
    args = ap.parse_args(argv)
    for p in write_study(args.results, args.data_dir, train=not args.no_train):
        print(p)


if __name__ == "__main__":
    main()
