"""What ``plab run`` prints at the end: one metric convention, test error in %.

* without a grid, one table of the prediction rules in the config's order, then the counts
  (mistakes, support vectors), per checkpoint; with a grid, one row per grid point
  (:func:`grid_summary`). Each cell is the mean ± the sample standard deviation over the runs
  (folds x permutations; nested runs: the outer folds) of exactly the rows it names;
* for parameter searches, the grid point each plan chose and its cross-validated error
  (:func:`search_lines`), one row per *setting* (a value of the grid keys no plan searches, such
  as ``training.seed`` in Khardon & Wachman's Table 7 protocol), plan and rule: k-fold searches
  choose on the same folds they report (the figure is optimistic), nested runs on inner folds
  (the inner-CV error of the setting's own choices), reported on the outer folds.

A spread needs two values: a cell of one run prints its value alone and says so, never
``± nan`` nor a made-up ``± 0``; a table whose cells hold different numbers of runs prints each
cell's count.

``search.csv`` and ``nested.csv`` carry the same convention (:func:`with_error`): ``error_pct``
first, then ``accuracy_pct`` (= 100 - error), kept because Khardon & Wachman report accuracy.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from perceptron_lab.run.store import read_back_csv

COUNT_ROWS = ("mistakes", "support_vectors")
#: The column that ends the setting keys in ``search.csv`` and ``nested.csv``: the grid keys no
#: plan searches come first (:func:`perceptron_lab.run.evaluation.search_summary`).
_FIRST_NON_SETTING = "search"


def rule_order(rows, rules=()) -> list[str]:
    """Summary rows: the error rules (the config's order, each followed by its normalized form),
    then anything else, then the counts."""
    rows = list(rows)
    # a config may name a normalized rule itself (Freund & Schapire's list does): once each
    first = list(dict.fromkeys(r for base in rules for r in (base, f"{base}_norm") if r in rows))
    rest = [r for r in rows if r not in first and r not in COUNT_ROWS]
    return first + rest + [r for r in COUNT_ROWS if r in rows]


def with_error(table: pd.DataFrame) -> pd.DataFrame:
    """A search or nested summary with ``error_pct`` (100 - accuracy) before ``accuracy_pct``."""
    if "accuracy_pct" not in table.columns:
        return table
    t = table.copy()
    t.insert(list(t.columns).index("accuracy_pct"), "error_pct", 100.0 - t["accuracy_pct"].astype(float))
    return t


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def mean_sd(mean, sd, n, digits: int = 2, show_n: bool = False) -> str:
    """A cell: ``mean ± sd``, or the mean alone when it stands for one run (no spread to give), or
    ``no result`` when it stands for none. ``show_n`` appends the count, ``(n = 3)``, for tables
    whose cells hold different numbers of runs."""
    mean, sd, n = _num(mean), _num(sd), _num(n)
    if not _finite(mean) or not (_finite(n) and n >= 1):
        return "no result"
    text = f"{mean:.{digits}f}"
    if n >= 2 and _finite(sd):
        text += f" ± {sd:.{digits}f}"
    return text + (f" (n = {int(n)})" if show_n else "")


def _over(counts, what: str = "runs") -> tuple[str, bool]:
    """The header's words for the runs behind a table's cells and whether each cell must say its
    own count: ``mean ± std over 10 runs``; one run each: ``one run each, no std``."""
    ns = sorted({int(c) for c in counts if _finite(_num(c))})
    if len(ns) == 1 and ns[0] == 1:
        return f"one {what[:-1]} each, no std", False
    if len(ns) == 1:
        return f"mean ± std over {ns[0]} {what}", False
    return f"mean ± std over each cell's {what}, n given per cell", True


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    return ["  ".join(h.rjust(w) for h, w in zip(header, widths))] + [
        "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]


# ----------------------------------------------------------------------------- what ran


def _value_text(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "null" if v is None else str(v)


def _kernel_text(kernel: dict) -> str:
    """``linear kernel``, ``poly kernel (degree 4)``, ``gaussian kernel (sigma 3)``."""
    kind = kernel.get("type") or "linear"
    params = []
    if kind in ("poly", "poly_gaussian") and kernel.get("degree") is not None:
        params.append(f"degree {_value_text(kernel['degree'])}")
    if kind in ("gaussian", "poly_gaussian") and kernel.get("sigma") is not None:
        params.append(f"sigma {_value_text(kernel['sigma'])}")
    return f"{kind} kernel" + (f" ({', '.join(params)})" if params else "")


def _protocol_text(evaluation: dict, dataset: dict) -> str:
    mode = evaluation.get("mode") or "holdout"
    if mode == "kfold":
        return f"{evaluation.get('folds', '?')}-fold cross-validation"
    if mode == "nested":
        outer = ("the test split" if evaluation.get("outer") == "holdout"
                 else f"{evaluation.get('folds', '?')} outer folds")
        return f"nested cross-validation ({outer}, {evaluation.get('inner_folds', '?')} inner folds)"
    n_test = dataset.get("n_test")
    return f"the test split ({n_test} examples)" if n_test else "the test split"


def what_ran(config: dict, dataset: dict | None = None) -> str:
    """What a run ran, in one line, from its resolved config (``run.json``'s ``config``) and what it
    read (``run.json``'s ``dataset``): ``the perceptron, linear kernel, on sonar (208 examples, 60
    features); 10-fold cross-validation, 100 epochs; grid over algorithm.tau: 0, 0.125``."""
    from perceptron_lab.config.schema import ALGORITHM_TITLES

    config, dataset = config or {}, dataset or {}
    algo = (config.get("algorithm") or {}).get("name") or "perceptron"
    ds = config.get("dataset") or {}
    data = ds.get("name") or (Path(ds["path"]).name if ds.get("path") else None) or dataset.get("name") or "?"
    size = [f"{dataset['n_train']} examples" if dataset.get("n_train") else "",
            f"{dataset['n_features']} features" if dataset.get("n_features") else ""]
    size = ", ".join(s for s in size if s)
    training = config.get("training") or {}
    epochs = training.get("epochs")
    perms = training.get("permutations") or 1
    line = (f"{ALGORITHM_TITLES.get(algo, algo)}, {_kernel_text(config.get('kernel') or {})}, on {data}"
            + (f" ({size})" if size else "")
            + f"; {_protocol_text(config.get('evaluation') or {}, dataset)}"
            + (f", {_value_text(epochs)} epoch{'' if epochs == 1 else 's'}" if epochs is not None else "")
            + (f", {perms} training orders" if perms > 1 else ""))
    grid = (config.get("evaluation") or {}).get("grid") or {}
    if grid:
        line += "; grid over " + "; ".join(f"{k}: {', '.join(_value_text(v) for v in vs)}" for k, vs in grid.items())
    return line


# ----------------------------------------------------------------------------- the run's table


def format_summary(cfg, res, table) -> str:
    """What ``plab run`` prints at the end: where the results are, then without a grid one table
    (rules x checkpoints), with a grid one table of one row per grid point (:func:`grid_summary`),
    then the parameter searches (:func:`search_lines`). ``table`` is
    :func:`perceptron_lab.run.experiment.summarize`'s (mean, std and count of each cell's runs)."""
    out_dir = Path(res.out_dir)
    info = res.run_info or {}
    lines = [f"ran {what_ran(info.get('config') or cfg.to_dict(), info.get('dataset'))}",
             f"{cfg.name}: {res.ran} run(s) computed, {res.skipped} reused; results in {out_dir}/results.csv"]
    figs = sorted(p.name for p in out_dir.glob("*.png")) if cfg.output.figures else []
    tail = [f"figures in {out_dir}: {', '.join(figs)} (plab plot redraws them)"] if figs else []
    if table.empty:
        return "\n".join(lines + tail)
    if table["grid_point"].nunique() > 1:
        return "\n".join(lines + grid_summary(out_dir, table, cfg.prediction.rules) + search_lines(out_dir) + tail)
    cols = sorted(set(table["epoch"]))
    cell = {(r["rule"], r["epoch"]): r for r in table.to_dict("records")}
    over, show_n = _over(table["count"])
    if over.startswith("mean ± std over") and not show_n:
        lines.append("test error % (mean ± std over runs), then counts (totals over labels, mean ± std)")
    else:
        lines.append(f"test error %, then counts (totals over labels): {over}")
    lines.append(f"{'':16s}" + "".join(f"{'T=' + format(c, 'g'):>18s}" for c in cols))
    for rule in rule_order(dict.fromkeys(table["rule"]), cfg.prediction.rules):
        cells = []
        for c in cols:
            r = cell.get((rule, c))
            cells.append("" if r is None else mean_sd(r["mean"], r["std"], r["count"], 1 if rule in COUNT_ROWS else 2,
                                                      show_n))
        lines.append(f"{rule:16s}" + "".join(f"{x:>18s}" for x in cells))
    return "\n".join(lines + search_lines(out_dir) + tail)


def _grid_values(out_dir) -> "pd.DataFrame | None":
    """The run's grid.csv with only the columns that vary between points, headed by their last
    dotted part where that is unambiguous (``degree``), else the whole key; None without one."""
    grid = Path(out_dir) / "grid.csv"
    if not grid.exists():
        return None
    g = read_back_csv(grid, ["grid_point"])
    cols = [c for c in g.columns if c != "grid_point" and g[c].nunique() > 1]
    return g.set_index(g["grid_point"].astype(int))[cols].rename(columns=_short_names(cols))


def _short_names(cols) -> dict:
    """Grid keys headed by their last dotted part where that is unambiguous (``seed``)."""
    short = [c.split(".")[-1] for c in cols]
    return {c: (s if short.count(s) == 1 else c) for c, s in zip(cols, short)}


def grid_summary(out_dir, table, rules=()) -> list[str]:
    """One table for a run with a grid (a sweep): a row per grid point -- the values that vary,
    its last epoch when that varies, and the test error % of every rule at that epoch (mean ±
    std over that point's runs)."""
    out_dir = Path(out_dir)
    t = table[~table["rule"].isin(COUNT_ROWS)].assign(gp=table["grid_point"].astype(int))
    last = t.groupby("gp")["epoch"].transform("max")
    t = t[t["epoch"] == last]
    order = rule_order(dict.fromkeys(t["rule"]), rules)
    values = _grid_values(out_dir)
    head = [] if values is None else list(values.columns)
    epochs = t.groupby("gp")["epoch"].first()
    show_T = epochs.nunique() > 1 and not (values is not None and {"epochs", "training.epochs"} & set(values.columns))
    over, show_n = _over(t["count"])
    rows = []
    for g, part in t.groupby("gp", sort=True):
        vals = part.set_index("rule")
        row = [str(g)] + ([] if values is None else [str(v) for v in values.loc[g]])
        row += [f"{epochs[g]:g}"] if show_T else []
        row += [mean_sd(vals.loc[r, "mean"], vals.loc[r, "std"], vals.loc[r, "count"], 2, show_n)
                if r in vals.index else "" for r in order]
        rows.append(row)
    header = ["point"] + head + (["T"] if show_T else []) + order
    what = "at the last epoch" if epochs.nunique() == 1 else "at each point's last epoch" + (" T" if show_T else "")
    out = [f"test error % {what} ({over}), one row per grid point"] + _table(header, rows)
    for extra in ("search.csv", "nested.csv"):
        if (out_dir / extra).exists():
            out.append(f"parameter selection summary: {out_dir / extra} (error_pct, then accuracy_pct)")
    return out


# ----------------------------------------------------------------------------- searches


def _sd_note(over: str, name: str) -> str:
    """The search summaries' sd is the maximum-likelihood one, as their files have it (Khardon &
    Wachman 2007, footnote 5), unlike the sample sd of the run's table: said where one is printed."""
    return f"{over}; the sd is the maximum-likelihood one, as in {name}" if over.startswith("mean") else over


def _per(keys) -> str:
    return "per setting, plan and rule" if keys else "per plan and rule"


def _settings(t: pd.DataFrame) -> list[str]:
    """The setting keys of a search.csv or nested.csv: the columns before ``search``."""
    cols = list(t.columns)
    return cols[:cols.index(_FIRST_NON_SETTING)] if _FIRST_NON_SETTING in cols else []


def _rule_name(r) -> str:
    return r["rule"] + ("_norm" if str(r.get("normalized", "")).lower() == "true" else "")


def search_lines(out_dir) -> list[str]:
    """The chosen grid points of a run's searches with their cross-validated error, one row per
    setting, plan and rule, from ``search.csv`` (k-fold) or ``nested.csv`` and ``results.csv``
    with ``grid.csv`` (nested); empty without a search."""
    out = Path(out_dir)
    lines = []
    s = out / "search.csv"
    if s.is_file():
        t = read_back_csv(s, ["search", "rule", "chosen", "error_pct", "sd_pct", "n_runs"])
        keys = _settings(t)
        over, show_n = _over(t["n_runs"].map(_num))
        lines.append("parameter search (the same folds chose and report the point, so its error is optimistic): "
                     f"{_per(keys)}, the chosen point and its cross-validated test error % "
                     f"({_sd_note(over, 'search.csv')})")
        rows = []
        for _, r in t.iterrows():
            n = _num(r["n_runs"])
            rows.append([str(r[k]) for k in keys] + [r["search"], _rule_name(r),
                        r["chosen"] if n >= 1 else "(no point with results)",
                        mean_sd(r["error_pct"], r["sd_pct"], n, 2, show_n)])
        header = list(_short_names(keys).values()) + ["plan", "rule", "chosen", "test error %"]
        lines += ["  " + x for x in _table(header, rows)]
    n = out / "nested.csv"
    if n.is_file():
        t = read_back_csv(n, ["search", "rule", "normalized", "choices", "error_pct", "sd_pct", "n_folds"])
        keys = _settings(t)
        inner = _inner_errors(out, keys)
        over, show_n = _over(t["n_folds"].map(_num), "outer folds")
        lines.append(f"nested search: {_per(keys)}, the points chosen on the inner folds (how often), "
                     "the mean over outer folds of the chosen points' inner-CV error %, and the outer folds' test "
                     f"error % of the chosen points ({_sd_note(over, 'nested.csv')})")
        rows = []
        for _, r in t.iterrows():
            norm = str(r.get("normalized", "")).lower() == "true"
            ie = inner.get((tuple(str(r[k]) for k in keys), r["search"], r["rule"], norm))
            rows.append([str(r[k]) for k in keys] + [r["search"], _rule_name(r), r["choices"],
                        "?" if ie is None else format(ie, ".2f"),
                        mean_sd(r["error_pct"], r["sd_pct"], r["n_folds"], 2, show_n)])
        header = list(_short_names(keys).values()) + ["plan", "rule", "chosen", "inner-CV error %",
                                                      "outer test error %"]
        lines += ["  " + x for x in _table(header, rows)]
    return lines


def _inner_errors(out: Path, keys: list[str]) -> dict:
    """((setting values), plan, rule, normalized) -> the mean over outer folds of the chosen
    point's inner-CV error, each setting from its own rows only (a grid point's setting is read
    from ``grid.csv``)."""
    res = out / "results.csv"
    if not res.is_file():
        return {}
    d = read_back_csv(res, ["metric", "rule", "normalized", "fold", "value", "grid_point"])
    if "search" not in d:
        return {}
    d = d[(d["search"] != "") & (d["metric"] == "inner_cv_error_pct")]
    if keys:
        g = read_back_csv(out / "grid.csv", ["grid_point", *keys])
        setting = {p: tuple(v) for p, v in zip(g["grid_point"], g[keys].itertuples(index=False, name=None))}
        d = d[d["grid_point"].isin(setting)]
        d = d.assign(setting=d["grid_point"].map(setting))
    else:
        d = d.assign(setting=[()] * len(d))
    d = d.assign(value=pd.to_numeric(d["value"], errors="coerce"), norm=d["normalized"].str.lower() == "true")
    # one value per outer fold (the rows repeat it once per permutation), then their mean
    per_fold = d.groupby(["setting", "search", "rule", "norm", "fold"])["value"].mean()
    return {k: float(v) for k, v in per_fold.groupby(level=[0, 1, 2, 3]).mean().items()}


__all__ = ["rule_order", "with_error", "mean_sd", "format_summary", "grid_summary", "search_lines", "COUNT_ROWS"]
