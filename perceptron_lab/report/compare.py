"""``plab compare RUN_A RUN_B ...``: several runs side by side, and run against run.

One table, a column per run (and per grid point of a run with a grid), headed by the shortest
label that tells the columns apart (:func:`perceptron_lab.run.figures.run_labels`): the test error of every prediction rule
at the run's last epoch, then the mistake and support-vector counts, each as mean ± standard
deviation over the run's folds and permutations; and one figure (test error against epochs, a
panel per rule, a line per column). Views of it: only the settings and rows that differ
(:func:`settings`, :func:`differing`), a row per column (:func:`short_rows`), numbers for CSV
(:func:`numbers`).

Whether run A is better than run B (:func:`paired_runs`), or rule X than rule Y
(:func:`paired_rules`): the paired difference over the folds and permutations both sides have
(the same fold and permutation index in both, so the same test examples and training order),
its mean and an interval whose assumptions hold under the run's protocol
(:func:`paired_difference`, :mod:`perceptron_lab.report.paired`): Nadeau & Bengio's corrected
resampled t over the folds of a cross-validation, a conservative bound on one fixed test set.
A side is called lower only when that interval excludes 0. Runs whose folds are
not provably the same test sets are refused (:func:`not_comparable`): other data by the
fingerprint run.json records (whatever the files or datasets are called), another evaluation
mode, fold count or fold seed, or a run.json without a fingerprint. Runs that reproduce a paper's table also get their
counts of cells within tolerance, and with ``--only-outside`` the cells outside it with their
causes (:func:`perceptron_lab.report.tables.compare_text`).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd

from perceptron_lab.errors import OutputError, UsageError, UserFileError
from perceptron_lab.report.paired import (CORRECTED_T, HOLDOUT_BOUND, MIN_FOLDS, MIN_TEST_EXAMPLES, NO_DIFFERENCE,
                                          NO_VERDICT, PAIRED_CONFIDENCE, corrected_t, fold_means, holdout_bound,
                                          verdict)
from perceptron_lab.run.figures import (COUNT_METRICS, LINE_STYLES, _figure, epoch_axis, error_axis, label_outer,
                                        legend_outside, read_run, rule_order, run_labels, save_figure, style,
                                        suptitle)

#: At most this many runs (grid points) are drawn in the figure, each in a style of its own (the
#: table keeps them all); the figure's title and a warning on stderr name the runs left out.
MAX_LINES = 40
#: A legend label takes at most this many characters a line and this many lines
#: (:func:`legend_labels`).
LABEL_WIDTH = 32
LABEL_LINES = 3
#: What splits a label into words (:func:`legend_labels`): blanks, ``_ / , ; +`` and brackets;
#: ``-``, ``.`` and ``=`` stay inside words (``tau=0.5``, ``kernel.degree-2``).
_LABEL_SEPARATORS = re.compile(r"[\s_/,;+()\[\]]+")
_NUMBER = re.compile(r"^[-+]?[\d.]+(?:e[-+]?\d+)?$")


def _columns(run_dirs, points=None) -> list[dict]:
    """One entry per (run, grid point): its short label (:func:`column_labels`), results, last
    epoch, run.json and grid values. ``points`` (grid point numbers, as ``grid.csv`` and ``plab run``
    number them) keeps only those points of every run, in the order given;
    :class:`~perceptron_lab.errors.UsageError` when a run has no such point."""
    read = [(Path(d), *read_run(d)) for d in run_dirs]
    names = [str(info.get("name") or d.name) for d, _, info, _ in read]
    labels = run_labels([d for d, *_ in read], names)
    cols = []
    for (d, df, info, glabels), name in zip(read, labels):
        gps = sorted(df["gp"].unique())
        if points is not None:
            missing = [p for p in points if p not in gps]
            if missing:
                raise UsageError(f"{d} has no grid point {missing[0]} (its points are "
                                 f"{', '.join(map(str, gps))}, numbered as in its grid.csv)")
            gps = list(points)
        grid = _grid_rows(d)
        for g in gps:
            sub = df[df["gp"] == g]
            point = glabels.get(int(g)) or f"grid point {g}"
            label = (name if len(gps) == 1 and points is None else point if len(read) == 1
                     else f"{name} [{point}]")
            cols.append({"name": label, "dir": d, "info": info, "gp": int(g), "df": sub,
                         "grid": grid.get(int(g), {}), "last": float(sub["epoch"].max()),
                         "runs": sub.groupby(["fold", "permutation"]).ngroups})
    for c, label in zip(cols, column_labels(cols)):
        c["name"] = label
    return cols


#: What a setting that does not apply to a run shows (a Stoptron's eta, a perceptron's budget) in
#: the settings and in the labels built from them.
NOT_APPLICABLE = "\u2014"


def column_labels(cols, width: int = LABEL_WIDTH) -> list[str]:
    """The shortest labels that tell the columns apart. The labels :func:`_columns` starts from
    (the runs' names, a single run's grid values ``tau=0.125``) are kept when they differ and are
    at most ``width`` characters; otherwise each column is named by the values of the settings
    that differ between the columns (:func:`settings`), joined by ``/`` in the config's order and
    leaving out those that do not apply to it: ``perceptron`` and ``stoptron/10`` for a perceptron
    and a Stoptron with a budget of 10. A label of numbers only names its keys (``tau=0.5``).
    Columns of the same settings (one config run twice) add the shortest tail of their folder; when
    nothing tells them apart (one folder given twice), the starting labels stay."""
    start = [c["name"] for c in cols]
    if len(set(start)) == len(start) and all(len(x) <= width for x in start):
        return start
    flats = _flat_settings(cols)
    keys = list(dict.fromkeys(k for cfg in flats for k in cfg if k not in _NAMING))
    labels: list[list[tuple[str, str]]] = [[] for _ in cols]
    for k in keys:
        # the values of the columns where the same schema row applies: a key two algorithms share in
        # name only (the perceptron's C, ALMA's C) tells nothing the algorithm's name does not
        meant = [(_applying_row(k, cfg), _text(cfg[k])) if k in cfg else (None, None) for cfg in flats]
        rows = {r for r, _ in meant if r is not None}
        if not any(len({v for r2, v in meant if r2 == r}) > 1 for r in rows):
            continue
        for lab, (r, v) in zip(labels, meant):
            if r is not None:
                lab.append((k, v))
    out = []
    for values in labels:
        if values and all(_NUMBER.match(v) for _, v in values):
            out.append("/".join(f"{key.split('.')[-1]}={v}" for key, v in values))
        else:
            out.append("/".join(v for _, v in values))
    if not all(out):
        return start
    if len(set(out)) < len(out):   # runs of the same settings (one config run twice): their folders tell them apart
        dirs = list(dict.fromkeys(Path(c["dir"]) for c in cols))
        tails = dict(zip(dirs, (t.removeprefix(" (").removesuffix(")") for t in run_labels(dirs, [""] * len(dirs)))))
        out = [f"{x} ({tails[Path(c['dir'])]})" if out.count(x) > 1 else x for x, c in zip(out, cols)]
        if len(set(out)) < len(out):
            return start
    return out


def _grid_rows(run_dir: Path) -> dict:
    """Grid point -> {key: value} from the run's grid.csv ({} without one)."""
    from perceptron_lab.run.store import read_back_csv

    g = run_dir / "grid.csv"
    if not g.is_file():
        return {}
    t = read_back_csv(g, ["grid_point"])
    return {int(r["grid_point"]): {k: r[k] for k in t.columns if k != "grid_point"} for _, r in t.iterrows()}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and k != "grid":
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


#: Settings that never make two runs' numbers differ: left out of the settings that differ.
_NAMING = ("name", "description", "output.dir", "output.figures", "extends", "paper")


def settings(cols, names=None) -> pd.DataFrame:
    """Every setting of every column (the config in its run.json, with the grid point's values in
    place of the grid), a row per dotted key, a column per run (per grid point) headed by its
    label (or by ``names``). A setting that does not apply to a column -- a key the schema ties to
    another algorithm or kernel (:func:`applies`), or one its config lacks -- shows
    :data:`NOT_APPLICABLE`, not ``null``: ``null`` is a value the run ran with."""
    names = [c["name"] for c in cols] if names is None else list(names)
    flats = _flat_settings(cols)
    keys = list(dict.fromkeys(k for cfg in flats for k in cfg if k not in _NAMING))
    return pd.DataFrame({n: [_text(cfg[k]) if k in cfg and applies(k, cfg) else NOT_APPLICABLE for k in keys]
                         for n, cfg in zip(names, flats)}, index=keys)


def _flat_settings(cols) -> list[dict]:
    """Each column's config as dotted key -> value, its grid point's values in place of the grid."""
    flats = []
    for c in cols:
        cfg = _flat((c["info"] or {}).get("config") or {})
        cfg.pop("evaluation.grid", None)
        cfg.update({k: _num_text(v) for k, v in c["grid"].items()})
        flats.append(cfg)
    return flats


def _applying_row(key: str, flat: dict) -> int | None:
    """The index in the schema of the row of ``key`` in effect in the flat config ``flat``, -1 for a
    key the schema does not know, None when no row of it applies."""
    from perceptron_lab.config.schema import SCHEMA

    rows = [(i, p) for i, p in enumerate(SCHEMA) if p.path == key]
    if not rows:
        return -1
    return next((i for i, p in rows if p.when is None
                 or flat.get(f"{p.section}.{p.when[0]}" if p.section else p.when[0]) in p.when[1]), None)


def applies(key: str, flat: dict) -> bool:
    """Whether the dotted config ``key`` is in effect in the flat config ``flat`` (dotted key ->
    value): the schema's rows for the key (:data:`perceptron_lab.config.schema.SCHEMA`) say under
    which algorithm or kernel it applies; a key the schema does not know applies."""
    return _applying_row(key, flat) is not None


def _num_text(v):
    try:
        f = float(v)
        return int(f) if f.is_integer() else f
    except (TypeError, ValueError):
        return v


def _text(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    return str(v)


#: Short headers of the table's rows for the layout with a row per run (the header line says
#: the unit).
SHORT_ROWS = {"epoch (last)": "T", "runs (folds x permutations)": "n runs", "support vectors": "SVs"}


def short_rows(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with short row names: ``vote`` for ``test error % vote``, ``T``, ``n runs``."""
    return table.rename(index=lambda r: SHORT_ROWS.get(r, r.removeprefix("test error % ")))


def numbers(cols, rows=None) -> pd.DataFrame:
    """The side-by-side table as numbers, for CSV: a row per run (per grid point) with its label,
    last epoch and number of runs, then ``<rule>_mean`` and ``<rule>_std`` of the test error %
    and the same for ``mistakes`` and ``support_vectors``; ``rows`` (names of
    :func:`side_by_side`'s rows) keeps only those."""
    out = []
    for c in cols:
        r = {"run": c["name"], "epoch": c["last"], "n_runs": c["runs"]}
        for rule in _rules(cols):
            v = _at_last(c, "test_error_pct", rule)
            if rows is None or f"test error % {rule}" in rows:
                r[f"{rule}_mean"], r[f"{rule}_std"] = _ms(v)
        for m in COUNT_METRICS:
            if rows is None or m.replace("_", " ") in rows:
                r[f"{m}_mean"], r[f"{m}_std"] = _ms(_at_last(c, m, None))
        out.append(r)
    return pd.DataFrame(out)


def _ms(v: pd.Series):
    if v.empty:
        return float("nan"), float("nan")
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else float("nan")


def differing(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``table`` whose cells are not all the same (MLflow's "show diff only")."""
    if table.shape[1] < 2:
        return table
    return table[table.nunique(axis=1, dropna=False) > 1]


def _cell(values: pd.Series, count: bool) -> str:
    if values.empty:
        return ""
    m = values.mean()
    s = values.std(ddof=1) if len(values) > 1 else float("nan")
    if count:
        return f"{m:.1f}" + ("" if s != s else f" ± {s:.1f}")
    return f"{m:.2f}" + ("" if s != s else f" ± {s:.2f}")


def side_by_side(run_dirs, cols=None) -> pd.DataFrame:
    """The table: rows ``test error % <rule>`` (the rules in the order the runs list them), then
    ``mistakes`` and ``support vectors``; a column per run (per grid point), headed by its short
    label (:func:`_columns`)."""
    cols = _columns(run_dirs) if cols is None else cols
    rules: list[str] = []
    for c in cols:
        rules += [r for r in dict.fromkeys(c["df"].loc[c["df"]["metric"] == "test_error_pct", "label"])
                  if r not in rules]
    rows = {"epoch (last)": [f"{c['last']:g}" for c in cols], "runs (folds x permutations)": [str(c["runs"]) for c in cols]}
    for r in rules:
        rows[f"test error % {r}"] = [_cell(_at_last(c, "test_error_pct", r), False) for c in cols]
    for m in COUNT_METRICS:
        vals = [_cell(_at_last(c, m, None), True) for c in cols]
        if any(vals):
            rows[m.replace("_", " ")] = vals
    return pd.DataFrame(rows, index=[c["name"] for c in cols]).T


def _at_last(c: dict, metric: str, rule) -> pd.Series:
    d = c["df"]
    d = d[(d["metric"] == metric) & (d["epoch"] == c["last"])]
    if rule is not None:
        d = d[d["label"] == rule]
    # one value per fold and permutation (counts: totals over labels are already one row each)
    return d.groupby(["fold", "permutation"])["value"].sum() if rule is None else d.set_index(
        ["fold", "permutation"])["value"]


# ----------------------------------------------------------------------------- paired differences



def _errors(c: dict, rule: str) -> pd.Series:
    """Test error % of ``rule`` at the column's last epoch, one value per (fold, permutation)."""
    return _at_last(c, "test_error_pct", rule).astype(float)


#: The evaluation settings that assign a run's examples to folds, when its folds are its test sets.
_FOLD_SETTINGS = ("evaluation.folds", "evaluation.fold_seed", "evaluation.stratify")

#: Dataset settings a grid may vary without changing which examples are read (preprocessing is
#: fitted per unit, after the data is read and fingerprinted).
_SAME_EXAMPLES = ("dataset.preprocess",)

#: What to do when two runs' test sets cannot be proved the same.
SAME_TEST_SETS_FIX = ("rerun one of them with the other's data and evaluation settings (plab run CONFIG "
                      "--out DIR), or compare rules within each run with --rules")


def _setting(c: dict, key: str):
    """The value of the dotted ``key`` a column ran with: its grid point's value where the grid sets
    it (grid.csv holds text), else its run.json's resolved config's."""
    if key in c["grid"]:
        return _num_text(c["grid"][key])
    v = (c["info"] or {}).get("config") or {}
    for k in key.split("."):
        v = v.get(k) if isinstance(v, dict) else None
    return v


def _fingerprint(c: dict) -> tuple[str | None, tuple[str, str] | None]:
    """(the fingerprint of the data a column's units read, None), or (None, (why it is not known,
    what to do))."""
    data = [k for k in c["grid"] if k.startswith("dataset.") and k not in _SAME_EXAMPLES]
    if data:
        k = data[0]
        return None, (f"{c['name']} is a grid point that sets {k} ({c['grid'][k]}), and run.json records the "
                      "fingerprint of the config's data only, so nothing proves which data that point read",
                      f"rerun it as a run of its own (plab run CONFIG {k}={c['grid'][k]} --out DIR) and compare that")
    fp = ((c["info"] or {}).get("dataset") or {}).get("fingerprint")
    if not fp:
        return None, (f"{Path(c['dir']) / 'run.json'} records no data fingerprint (an older plab wrote it), so "
                      "nothing proves which data it read", "rerun it (plab run with its config and --out) to record one")
    return str(fp), None


def not_comparable(a: dict, b: dict) -> str | None:
    """Why two columns' folds and permutations are not provably the same test sets (None when they
    are); :func:`why_not_comparable` adds what to do."""
    why = why_not_comparable(a, b)
    return None if why is None else why[0]


def why_not_comparable(a: dict, b: dict) -> tuple[str, str | None] | None:
    """(why two columns' folds and permutations are not provably the same test sets, what to do or
    None), or None when they are. By content, never by name: first the data they read (the fingerprint
    run.json records, :func:`perceptron_lab.run.store.data_fingerprint` of the training and test
    examples as read, so other file contents, another subset or split differ, and the same contents
    under another file or dataset name do not), then what assigns those examples to test sets: the
    evaluation mode, the outer loop of nested cross-validation and, when folds are the test sets,
    their number and seed, each as the column ran it (its grid point's value where the grid sets
    it). A run.json without a fingerprint, or a grid point whose grid changes the data read
    (run.json records the fingerprint of the config's data only), proves nothing and is refused."""
    if a["dir"] == b["dir"]:
        # grid points of one run share its data, folds and training orders, unless the grid changes them
        for k in sorted(set(a["grid"]) | set(b["grid"])):
            if k.startswith(("dataset.", "evaluation.")) and a["grid"].get(k) != b["grid"].get(k):
                return f"their grid points differ in {k} ({a['grid'].get(k)} vs {b['grid'].get(k)})", None
        return None
    (fa, why_a), (fb, why_b) = _fingerprint(a), _fingerprint(b)
    if why_a or why_b:
        return why_a or why_b
    if fa != fb:
        return (f"they read different data (data fingerprint {fa} vs {fb}), so their folds hold other examples "
                "whatever the files or datasets are called", SAME_TEST_SETS_FIX)
    mode_a, mode_b = _setting(a, "evaluation.mode"), _setting(b, "evaluation.mode")
    if mode_a != mode_b:
        return f"they differ in evaluation mode ({mode_a} vs {mode_b})", None
    outer_a, outer_b = _setting(a, "evaluation.outer"), _setting(b, "evaluation.outer")
    if mode_a == "nested" and outer_a != outer_b:
        return f"they differ in evaluation.outer ({outer_a} vs {outer_b}), so their test sets differ", None
    if mode_a == "kfold" or (mode_a == "nested" and outer_a != "holdout"):
        for k in _FOLD_SETTINGS:
            x, y = _setting(a, k), _setting(b, k)
            if x != y:
                return f"they differ in {k} ({x} vs {y}), so fold k holds other examples", None
    return None


def protocol(c: dict) -> dict:
    """How a column's test sets were drawn, as the paired tests need it: ``{"kind": "kfold",
    "folds": K, "ratio": n_test / n_train}`` for k-fold cross-validation (and nested with an outer
    k-fold), ``{"kind": "holdout", "n_test": n}`` for one fixed test set. ``ratio`` is ``1 / (K - 1)``
    (a fold's test part against its training part), or with ``evaluation.fold_train_size`` m the
    fold's size ``N / K`` against m (None when run.json records no N); ``n_test`` is run.json's
    (None when it records none)."""
    ds = (c["info"] or {}).get("dataset") or {}
    mode = _setting(c, "evaluation.mode") or "holdout"
    if mode == "kfold" or (mode == "nested" and (_setting(c, "evaluation.outer") or "kfold") != "holdout"):
        k = int(_setting(c, "evaluation.folds") or 0)
        m, n = _setting(c, "evaluation.fold_train_size"), ds.get("n_train")
        if m:
            ratio = (float(n) / k) / float(m) if n and k else None
        else:
            ratio = 1.0 / (k - 1) if k > 1 else None
        return {"kind": "kfold", "folds": k, "ratio": ratio}
    return {"kind": "holdout", "n_test": ds.get("n_test")}


def _joint_protocol(a: dict, b: dict) -> dict:
    """One protocol for two comparable columns: the larger test/train ratio (the wider interval)."""
    pa, pb = protocol(a), protocol(b)
    if pa["kind"] == "kfold" and pb["kind"] == "kfold":
        ratios = (pa["ratio"], pb["ratio"])
        return {**pa, "ratio": None if None in ratios else max(ratios)}
    return pa


def paired_difference(x: pd.Series, y: pd.Series, confidence: float = PAIRED_CONFIDENCE,
                      proto: dict | None = None) -> dict:
    """The paired difference ``x - y`` (test errors %, indexed by fold and permutation) over the
    pairs both have, with the interval the protocol ``proto`` (:func:`protocol`) makes valid:

    * k-fold: the pairs averaged over the permutations of each fold, then Nadeau & Bengio's
      corrected resampled t over the J fold means (:func:`perceptron_lab.report.paired.corrected_t`);
      ``x`` and ``y`` are averaged the same way, so ``x - y`` is the difference tested;
    * one test set: the bound of :func:`perceptron_lab.report.paired.holdout_bound` on its n examples.

    Returns ``n`` (folds, or test examples), ``pairs`` (fold and permutation pairs shared), ``x``,
    ``y``, ``diff``, ``se``, ``lo``, ``hi``, ``method`` and ``why`` (why no interval, or None)."""
    proto = proto or {"kind": "kfold", "ratio": None}
    shared = x.index.intersection(y.index)
    xs, ys = x.loc[shared].astype(float), y.loc[shared].astype(float)
    if proto["kind"] == "kfold":
        fx, fy = fold_means(xs), fold_means(ys)
        r = corrected_t((fx - fy).to_numpy(), proto["ratio"], confidence)
        mx, my = (float(fx.mean()), float(fy.mean())) if len(shared) else (None, None)
    else:
        mx, my = (float(xs.mean()), float(ys.mean())) if len(shared) else (None, None)
        r = holdout_bound(mx, my, proto.get("n_test"), confidence) if len(shared) else \
            {"method": HOLDOUT_BOUND, "n": 0, "diff": None, "se": None, "lo": None, "hi": None, "why": "no pair"}
    return {**r, "pairs": len(shared), "x": mx, "y": my}


def paired_runs(cols, confidence: float = PAIRED_CONFIDENCE) -> pd.DataFrame:
    """Column A against column B (exactly two), rule by rule: the test error % of each at its last
    epoch and the paired difference A - B over their shared folds and permutations, with its
    interval and verdict (:func:`paired_difference`). :class:`~perceptron_lab.errors.UsageError`
    (exit status 2) when the two are not comparable (:func:`not_comparable`) or share no fold and
    permutation."""
    if len(cols) != 2:
        hint = ("; pick two grid points with --points I,J (grid point numbers: "
                + ", ".join(f"{c['gp']} {c['name']}" for c in cols) + ")") if len({c["dir"] for c in cols}) == 1 else \
            ("; give two run folders, or one folder and --points I,J" if len(cols) > 2 else "")
        raise UsageError(f"a paired comparison takes two runs (or a run with two grid points); these give {len(cols)}: "
                         + ", ".join(c["name"] for c in cols) + hint)
    a, b = cols
    who = f"{a['name']} and {b['name']} of {a['dir']}" if a["dir"] == b["dir"] else f"{a['dir']} and {b['dir']}"
    why = why_not_comparable(a, b)
    if why:
        raise UsageError(f"{who} are not comparable: {why[0]}; a paired difference needs the same test sets"
                         + (f": {why[1]}" if why[1] else ""))
    proto = _joint_protocol(a, b)
    rules = [r for r in _rules([a]) if r in _rules([b])]
    rows = []
    for rule in rules:
        r = paired_difference(_errors(a, rule), _errors(b, rule), confidence, proto)
        if r["pairs"] == 0:
            raise UsageError(f"{who} are not comparable: they share no fold and permutation")
        rows.append(_paired_row(rule, r, "A", "B"))
    return pd.DataFrame(rows, columns=PAIRED_COLUMNS)


def paired_rules(cols, x: str, y: str, confidence: float = PAIRED_CONFIDENCE) -> pd.DataFrame:
    """Within each column, rule ``x`` against rule ``y``: the paired difference x - y over the
    column's folds and permutations (the same units predict with both rules), with its interval
    and verdict (:func:`paired_difference`)."""
    rows = []
    for c in cols:
        have = _rules([c])
        for r in (x, y):
            if r not in have:
                raise UsageError(f"{c['dir']}: no rule {r!r} in its results (it has {', '.join(have)})")
        res = paired_difference(_errors(c, x), _errors(c, y), confidence, protocol(c))
        rows.append({"run": c["name"], **_paired_row(f"{x} - {y}", res, x, y)})
    return pd.DataFrame(rows, columns=["run", *PAIRED_COLUMNS])


#: The columns of a paired table (and of its CSV): ``n`` is the number of folds (``corrected t``)
#: or of test examples (``holdout bound``) the interval rests on, ``se`` its standard error.
PAIRED_COLUMNS = ["rule", "A", "B", "A - B", "se", "ci_low", "ci_high", "n", "method", "verdict"]


def _paired_row(what: str, r: dict, a: str, b: str) -> dict:
    return {"rule": what, "A": r["x"], "B": r["y"], "A - B": r["diff"], "se": r["se"], "ci_low": r["lo"],
            "ci_high": r["hi"], "n": r["n"], "method": r["method"], "verdict": verdict(r, a, b)}


def paired_display(table: pd.DataFrame, confidence: float = PAIRED_CONFIDENCE) -> pd.DataFrame:
    """A paired table (:func:`paired_runs`, :func:`paired_rules`) for reading: two decimals, the
    interval as ``[low, high]``, then ``n``, ``method`` and ``verdict``."""
    t = table.copy()
    fmt = lambda v: "" if v is None or v != v else f"{v:.2f}"  # noqa: E731
    for k in ("A", "B", "A - B", "se"):
        t[k] = t[k].map(fmt)
    t[f"{confidence * 100:g}% CI"] = [("" if lo is None or lo != lo else f"[{lo:.2f}, {hi:.2f}]")
                                      for lo, hi in zip(table["ci_low"], table["ci_high"])]
    t = t.drop(columns=["ci_low", "ci_high"])
    order = [c for c in t.columns if c not in ("n", "method", "verdict")] + ["n", "method", "verdict"]
    return t[order]


def paired_text(table: pd.DataFrame, confidence: float = PAIRED_CONFIDENCE) -> str:
    """A paired table (:func:`paired_runs`, :func:`paired_rules`) as text (:func:`paired_display`)."""
    return paired_display(table, confidence).to_string(index=False)


def paired_notes(table: pd.DataFrame, confidence: float = PAIRED_CONFIDENCE, width: int = 100) -> list[str]:
    """What the intervals of a paired table mean and when they call a winner: a paragraph per
    method in the table, then the rule of the verdicts, as lines of at most ``width`` characters."""
    import textwrap

    level = f"{confidence * 100:g}%"
    notes = {
        CORRECTED_T: f"{CORRECTED_T}: n = folds. Each fold's training orders are averaged, then the {level} interval "
                     "is Nadeau & Bengio's corrected resampled t over the n fold means: variance s^2 (1/n + "
                     "n_test/n_train), not s^2/n, because the folds' training sets overlap; t with n - 1 degrees of "
                     "freedom. It is about learners trained on data sets of this size, not about these trained "
                     "models only.",
        HOLDOUT_BOUND: f"{HOLDOUT_BOUND}: n = test examples of the one test set. plab keeps no per-example "
                       "predictions, so McNemar's test cannot run: the interval takes the largest variance the two "
                       "error rates allow (conservative; normal approximation). It is about the models trained on "
                       "this training set, not about other training sets.",
    }
    lines = [notes[m] for m in dict.fromkeys(table["method"]) if m in notes]
    lines.append(f"A side is called lower only when the {level} interval excludes 0. '{NO_DIFFERENCE}': it "
                 f"contains 0, which does not show that the two are equal. '{NO_VERDICT}': what the test needs is "
                 f"missing (fewer than {MIN_FOLDS} folds, fewer than {MIN_TEST_EXAMPLES} test examples, no "
                 "spread, unknown sizes).")
    return [ln for para in lines for ln in textwrap.wrap(para, width)]


def _rules(cols) -> list[str]:
    rules: list[str] = []
    for c in cols:
        rules += [r for r in dict.fromkeys(c["df"].loc[c["df"]["metric"] == "test_error_pct", "label"])
                  if r not in rules]
    return rules


def check_figure(cols, out) -> None:
    """Refuse, before anything is printed, a figure that cannot be drawn: no test-error results
    (:class:`~perceptron_lab.errors.UsageError`), or a file plab did not write at ``out``
    (:class:`~perceptron_lab.errors.UserFileError`: plab never overwrites it)."""
    from perceptron_lab.run.store import check_replaceable

    if not _rules(cols):
        raise UsageError("the runs have no test-error results to draw")
    try:
        check_replaceable(Path(out))
    except UserFileError:
        raise UserFileError(f"{out} was not written by plab, and plab never overwrites a file it did not write: "
                            "move it away, or name another file with --figure") from None


def legend_labels(names, width: int = LABEL_WIDTH, lines: int = LABEL_LINES):
    """Legend labels a reader can read for runs labelled ``names`` (the table's labels,
    :func:`_columns`): ``(labels, template, key)``.

    Labels that fit in ``width`` characters are kept as they are (``template`` None). Otherwise
    every label loses the words all of them share, keeping the word before a bare number
    (``variant 07``, not ``07``), unless that would make two labels alike; ``template`` is then the
    first label with the words that differ as ``*`` (the figure's title shows it once). Each label
    is wrapped into lines of at most ``width`` characters. A label that still takes more than
    ``lines`` lines makes every label a number with its first words (``#3 kernel.degree-4 tau…``)
    and ``key`` the list of (number, full label) the figure prints under its panels."""
    names = [str(n) for n in names]
    if all(len(n) <= width for n in names):
        return names, None, []
    words = [[w for w in _LABEL_SEPARATORS.split(n) if w] for n in names]
    common = {w for w in words[0] if all(w in ws for ws in words[1:])} if len(names) > 1 else set()
    short = []
    for n, ws in zip(names, words):
        keep = {i for i, w in enumerate(ws) if w not in common}
        keep |= {i - 1 for i in keep if i > 0 and _NUMBER.match(ws[i])}
        short.append(" ".join(ws[i] for i in sorted(keep)) or n)
    template = None
    if len(set(short)) < len(short) or not common:
        short = names
    else:
        pieces = re.split(f"({_LABEL_SEPARATORS.pattern})", names[0])
        template = "".join(p if i % 2 or not p or p in common else "*" for i, p in enumerate(pieces))
    wrapped = [textwrap.wrap(t, width, break_on_hyphens=False) for t in short]
    if all(len(w) <= lines for w in wrapped):
        return ["\n".join(w) for w in wrapped], template, []
    labels = []
    for k, t in enumerate(short, 1):
        tag = f"#{k} "
        labels.append(tag + (t if len(tag) + len(t) <= width else t[:width - len(tag) - 1] + "\u2026"))
    return labels, template, [(f"#{k}", n) for k, n in enumerate(names, 1)]


def _line_style(k: int) -> dict:
    """The ``k``-th run's (colour, line style, marker): :func:`perceptron_lab.run.figures.style`
    for the first ten, then the same ten colours with other line styles and markers, so that up to
    :data:`MAX_LINES` runs are each drawn alike by none other."""
    st = style(k)
    if k >= len(LINE_STYLES):
        c, q = k % len(LINE_STYLES), k // len(LINE_STYLES)
        st["ls"] = LINE_STYLES[(c + 3 * q) % len(LINE_STYLES)][1]
        st["marker"] = LINE_STYLES[(c + 7 * q) % len(LINE_STYLES)][2]
    return st


def left_out(cols) -> str | None:
    """What the figure leaves out, in one line naming the runs (None when it draws them all)."""
    if len(cols) <= MAX_LINES:
        return None
    return (f"{len(cols) - MAX_LINES} of the {len(cols)} runs are not drawn in the figure (it draws at most "
            f"{MAX_LINES} lines; the table has them all): " + ", ".join(c["name"] for c in cols[MAX_LINES:]))


def plot_side_by_side(run_dirs, out, cols=None) -> Path:
    """Test error against epochs, a panel per rule, a line per run (per grid point), every panel on
    one y scale fitted to the data (:func:`perceptron_lab.run.figures.error_axis`); the legend,
    outside the panels, names each run by the readable form of its table label
    (:func:`legend_labels`), and the title says what every label shares and which runs past
    :data:`MAX_LINES` are not drawn (:func:`left_out`). ``cols``: the runs' columns
    (:func:`_columns`) when the caller has read them."""
    cols = _columns(run_dirs) if cols is None else cols
    check_figure(cols, out)
    labels, template, key = legend_labels([c["name"] for c in cols])
    shown = cols[:MAX_LINES]
    rules = rule_order(_rules(shown))
    ncols = min(3, len(rules))
    nrows = -(-len(rules) // ncols)
    longest = max(len(ln) for lab in labels[:MAX_LINES] for ln in lab.split("\n"))
    legend_h = 0.13 * sum(lab.count("\n") + 1 for lab in labels[:MAX_LINES]) + 0.07 * len(shown) + 1.0
    key_text = "\n".join(ln for tag, full in key[:MAX_LINES] for ln in textwrap.wrap(f"{tag}: {full}", 150))
    fig = _figure(4.4 * ncols + 0.6 + 0.075 * min(longest, 60),
                  max(3.3 * nrows + 0.6, legend_h) + 0.13 * (key_text.count("\n") + 1 if key else 0))
    # one x and one y scale for every panel: tick labels on the outer panels only (less to lay out)
    axes = fig.subplots(nrows, ncols, squeeze=False, sharex=True, sharey=True)
    drawn, epochs = [], [e for c in shown for e in c["df"]["epoch"].unique()]
    for ax, rule in zip(axes.flat, rules):
        for k, c in enumerate(shown):
            d = c["df"]
            d = d[(d["metric"] == "test_error_pct") & (d["label"] == rule)]
            if d.empty:
                continue
            curve = d.groupby("epoch")["value"].mean()
            ax.plot(curve.index, curve.values, lw=1.4, ms=3.5, label=labels[k],
                    markevery=max(1, len(curve) // 10), **_line_style(k))
            drawn += list(curve.values)
        ax.set_title(rule, fontsize="medium")
        epoch_axis(ax, epochs)
        ax.grid(True, alpha=0.3, lw=0.5)
    error_axis(axes.flat[0], drawn)    # shared by every panel
    for ax in list(axes.flat)[len(rules):]:
        ax.set_visible(False)
    label_outer(axes, len(rules), ncols, sharey=True)
    legend_outside(fig, fontsize="x-small")
    title = "test error vs epochs, runs side by side (mean over folds and permutations)"
    if template:
        title += ("; the legend gives the * of each run's label, "
                  + (template if len(template) <= 200 else template[:199] + "\u2026"))
    if len(cols) > MAX_LINES:
        title += (f"; {len(cols) - MAX_LINES} of the {len(cols)} runs are not drawn (at most {MAX_LINES} lines): "
                  + ", ".join(lab.replace("\n", " ") for lab in labels[MAX_LINES:]))
    suptitle(fig, title)
    if key:
        fig.supxlabel(key_text, fontsize="x-small", x=0.01, ha="left")
    out = Path(out)
    try:
        save_figure(fig, out)   # makes the folder: a failure is one line (OutputError), not an OSError
    except OutputError as exc:   # its fix names --out, which compare does not have: the path is --figure's
        raise OutputError(str(exc).replace("choose another output folder with --out",
                                           "choose another path with --figure")) from None
    return out


def table_text(table: pd.DataFrame) -> str:
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 250,
                           "display.max_colwidth", 60):
        return table.to_string()


__all__ = ["side_by_side", "plot_side_by_side", "check_figure", "table_text", "settings", "differing",
           "paired_difference", "paired_runs", "paired_rules", "paired_text", "paired_display", "paired_notes", "protocol",
           "legend_labels", "left_out", "column_labels", "applies", "NOT_APPLICABLE",
           "not_comparable", "why_not_comparable", "numbers", "short_rows"]
