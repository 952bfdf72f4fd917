"""The report of a researcher's own runs (``plab report runs/...``): the run folders that reproduce
no paper table (no ``paper:`` in their config, no paper tables beside their results).

For each run (each sweep): what ran in one line (:func:`perceptron_lab.run.summary.what_ran`), a
table of the prediction rules' test error (then the mistake and support-vector counts) at each
checkpoint, as mean ± standard deviation over the run's folds and permutations, a row per rule
(per grid point and rule for a sweep), and its figures (:func:`perceptron_lab.run.figures.plot_run`,
drawn into the report's folder). Then, across runs: the settings that differ between them
(:func:`perceptron_lab.report.compare.settings`, headed by the labels ``plab compare`` gives), and
the paired comparison of every two runs (grid points) whose test sets are provably the same
(:func:`perceptron_lab.report.compare.paired_runs`: the same data by fingerprint, evaluation and
folds); the pairs that are not comparable are listed with the reason.

The items are those of :func:`perceptron_lab.report.tables.build` (``("h2"|"h3"|"p", text)``,
``("ul", lines)``, ``("table", frame)``, ``("img", path)``), so that the Markdown report and the
HTML page render them the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from perceptron_lab.errors import UsageError

#: Checkpoints shown as columns of a run's table at most; a run with more (``training.curve_every``)
#: shows its configured checkpoints and last epoch.
MAX_CHECKPOINTS = 8
#: Grid points whose rows a sweep's table shows at most (``plab compare RUN --layout rows`` has them all).
MAX_POINTS = 20
#: Paired comparisons shown at most (``plab compare A B --paired`` gives any other).
MAX_PAIRS = 10
#: Rows of the count metrics in a run's table, after the rules.
COUNTS = (("mistakes", "mistakes"), ("support_vectors", "support vectors"))


def own_runs(rep) -> list[tuple[Path, dict]]:
    """The runs of ``rep`` (:func:`perceptron_lab.report.tables.collect`) that reproduce no paper
    table: complete or not, undamaged, with a ``results.csv`` and neither ``paper:`` in their config
    nor paper tables beside their results."""
    paper_dirs = {Path(t.run_dir) for t in rep.tables}
    out = []
    for d, info in rep.runs:
        if "damaged" in info or Path(d) in paper_dirs or (info.get("config") or {}).get("paper"):
            continue
        if (Path(d) / "results.csv").is_file():
            out.append((Path(d), info))
    return out


def readable_runs(rep) -> tuple[list[tuple[Path, dict]], list[tuple[Path, str]]]:
    """(:func:`own_runs` whose results.csv reads back whole, (folder, why) of those whose does not):
    a damaged results.csv stops the report like a damaged run.json, unless ``--allow-damaged``."""
    from perceptron_lab.errors import DamagedFileError, PlabError
    from perceptron_lab.run.figures import read_run

    good, bad = [], []
    for d, info in own_runs(rep):
        try:
            read_run(d, info)
        except DamagedFileError as exc:
            bad.append((d, str(exc)))
        except PlabError:   # a results.csv with no finished row yet: nothing to report
            continue
        else:
            good.append((d, info))
    return good, bad


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", text).strip("_") or "run"


def _main_epochs(info: dict, epochs) -> list[float]:
    """The checkpoints a run's table shows: all when few, else the configured ones and the last."""
    epochs = sorted({float(e) for e in epochs})
    if len(epochs) <= MAX_CHECKPOINTS:
        return epochs
    training = (info.get("config") or {}).get("training") or {}
    wanted = {float(e) for e in training.get("checkpoints") or ()} | {epochs[-1]}
    grid = ((info.get("config") or {}).get("evaluation") or {}).get("grid") or {}
    wanted |= {float(e) for e in grid.get("training.epochs", ())}
    return [e for e in epochs if e in wanted][-MAX_CHECKPOINTS:]


def run_table(df: pd.DataFrame, info: dict, glabels: dict) -> tuple[pd.DataFrame, str]:
    """A run's table (rules x checkpoints, a block of rows per grid point) and a note on what it
    leaves out ("" when nothing). Each cell: mean ± std over the (fold, permutation) runs it names
    (:func:`perceptron_lab.run.summary.mean_sd`); counts are totals over labels."""
    from perceptron_lab.run.figures import rule_order
    from perceptron_lab.run.summary import mean_sd

    epochs = _main_epochs(info, df["epoch"].unique())
    gps = sorted(df["gp"].unique())
    note = ""
    if len(gps) > MAX_POINTS:
        note = (f"the first {MAX_POINTS} of {len(gps)} grid points; plab compare RUN --layout rows lists every "
                "point at its last epoch")
        gps = gps[:MAX_POINTS]
    err = df[df["metric"] == "test_error_pct"]
    rules = rule_order(err["label"])
    rows = []
    for g in gps:
        sub = df[(df["gp"] == g) & df["epoch"].isin(epochs)]
        point = {"grid point": glabels.get(int(g)) or str(g)} if len(df["gp"].unique()) > 1 else {}
        for rule in rules:
            e = sub[(sub["metric"] == "test_error_pct") & (sub["label"] == rule)]
            rows.append({**point, "": f"test error % {rule}", **_cells(e, epochs, 2, mean_sd)})
        for metric, name in COUNTS:
            c = sub[sub["metric"] == metric].groupby(["epoch", "fold", "permutation"], as_index=False)["value"].sum()
            if len(c):
                rows.append({**point, "": name, **_cells(c, epochs, 1, mean_sd)})
    return pd.DataFrame(rows), note


def _cells(d: pd.DataFrame, epochs, digits: int, mean_sd) -> dict:
    out = {}
    for e in epochs:
        v = d.loc[d["epoch"] == e, "value"].astype(float)
        out[f"T = {e:g}"] = mean_sd(v.mean(), v.std(ddof=1), len(v), digits) if len(v) else ""
    return out


def _paired_frame(table: pd.DataFrame, confidence: float) -> pd.DataFrame:
    from perceptron_lab.report.compare import paired_display

    return paired_display(table, confidence)


def run_items(runs, out: Path, confidence: float = 0.95) -> list[tuple]:
    """The report items of the runs ``runs`` (``(folder, run.json)`` pairs, :func:`own_runs`); the
    figures are drawn into ``out/runs/<label>/``. A damaged results.csv raises
    :class:`~perceptron_lab.errors.DamagedFileError` (the caller decides whether to stop)."""
    from perceptron_lab.report.compare import (
        _columns,
        differing,
        paired_notes,
        paired_runs,
        settings,
        why_not_comparable,
    )
    from perceptron_lab.run.figures import plot_run, read_run, run_labels
    from perceptron_lab.run.summary import what_ran

    out = Path(out)
    runs = list(runs)
    if not runs:
        return []
    names = run_labels([d for d, _ in runs], [str(info.get("name") or d.name) for d, info in runs])
    cols = _columns([d for d, _ in runs])   # every run and grid point, labelled as plab compare labels them
    by_dir: dict = {}
    for c in cols:
        by_dir.setdefault(Path(c["dir"]), []).append(c["name"])
    items: list[tuple] = [
        ("h2", "Your runs"),
        ("p", f"{len(runs)} run folder{'s' if len(runs) > 1 else ''}. Test error in %, then the mistake and "
              "support-vector counts (totals over labels), at each checkpoint T: mean ± standard deviation over "
              "the run's folds and permutations (a cell of one run gives its value alone). `plab compare` "
              "puts any of them side by side."),
    ]
    for k, ((d, info), name) in enumerate(zip(runs, names), 1):
        df, _, glabels = read_run(d, info)
        points = by_dir.get(d, [])
        label = points[0] if len(points) == 1 else f"{name} (a sweep of {len(points)} grid points)"
        items.append(("h3", f"{label} — {d}"))
        status = info.get("status")
        units = df.groupby(["gp", "fold", "permutation"]).ngroups
        items.append(("p", f"Ran {what_ran(info.get('config') or {}, info.get('dataset'))}. {units} trained "
                           f"run{'s' if units != 1 else ''}; status {status or '?'}"
                           + (f", finished {info['finished']}" if info.get("finished") else "") + f". Source: `{d}`"))
        table, note = run_table(df, info, glabels)
        if note:
            items.append(("p", f"The table shows {note}."))
        items.append(("table", table))
        for png in plot_run(d, out / "runs" / f"{k:02d}_{_slug(label.split(' (a sweep')[0])[:60]}", info):
            items.append(("img", png))
    if len(cols) > 1:
        items.append(("h2", "Settings that differ between the runs"))
        sets = differing(settings(cols))
        if len(sets):
            frame = sets.T if len(cols) > 4 else sets
            first = "run" if len(cols) > 4 else "setting"
            items += [("p", "Each run (grid point) is named by the values of the settings that differ (as in "
                            "`plab compare`); — marks a setting that does not apply to it."),
                      ("table", frame.rename_axis(first).reset_index())]
        else:
            items.append(("p", "None: the runs ran with the same settings."))
        items += _paired_items(cols, confidence, paired_runs, paired_notes, why_not_comparable)
    return items


def _paired_items(cols, confidence, paired_runs, paired_notes, why_not_comparable) -> list[tuple]:
    """Every two columns whose test sets are provably the same, paired rule by rule (at most
    :data:`MAX_PAIRS`); the others listed with the reason."""
    pairs, refused = [], []
    for i, a in enumerate(cols):
        for b in cols[i + 1:]:
            why = why_not_comparable(a, b)
            (refused if why else pairs).append((a, b, why))
    items: list[tuple] = [("h2", "Paired comparisons")]
    if not pairs:
        items.append(("p", "No two runs can be paired: a paired difference needs the same test sets (the same data "
                           "by fingerprint, evaluation and folds)."))
    shown = []
    for a, b, _ in pairs[:MAX_PAIRS]:
        try:
            table = paired_runs([a, b], confidence)
        except UsageError as exc:   # no shared fold and permutation, no common rule
            refused.append((a, b, (str(exc), None)))
            continue
        shown.append(table)
        items += [("h3", f"A = {a['name']}, B = {b['name']}"),
                  ("p", f"Test error % at the last epoch; A - B is the mean of the paired differences over the folds "
                        f"and training orders both have, with its {confidence * 100:g}% interval. "
                        + (f"`plab compare {a['dir']} --points {a['gp']},{b['gp']} --paired`" if a["dir"] == b["dir"]
                           else f"`plab compare {a['dir']} {b['dir']} --paired`") + " gives the same."),
                  ("table", _paired_frame(table, confidence))]
    if len(pairs) > MAX_PAIRS:
        items.append(("p", f"{len(pairs) - MAX_PAIRS} more pairs can be compared: `plab compare A B --paired` "
                           "(`--points I,J` for two grid points of one run)."))
    if shown:
        notes = paired_notes(pd.concat(shown, ignore_index=True), confidence, width=10 ** 6)
        items.append(("ul", [f"- {n}" for n in notes]))
    if refused:
        lines = [f"- {a['name']} and {b['name']}: {why[0]}" for a, b, why in refused[:MAX_PAIRS]]
        if len(refused) > MAX_PAIRS:
            lines.append(f"- and {len(refused) - MAX_PAIRS} more pairs")
        items += [("p", "Not paired (their test sets are not provably the same):"), ("ul", lines)]
    return items


__all__ = ["MAX_CHECKPOINTS", "MAX_PAIRS", "MAX_POINTS", "own_runs", "readable_runs", "run_items", "run_table"]
