"""The report as HTML pages: a landing page and one page per paper (``plab report``).

The landing page (``index.html``) gives, per paper and per table, the strict count of in-scope
cells within tolerance, the count consistent with sampling, the cells compared and the causes of
the rest, with a small heat-map of every compared cell coloured by its status. Each paper's page
(``<paper>.html``) has a table of contents, every table as a grid of cells coloured by status
(hovering a cell shows the paper's value, ours ± std, the difference, the tolerance and the
cause), the paper's printed layout, the figures and the list of cells outside tolerance.

Pages are rendered from Jinja2 templates (``perceptron_lab/templates/``) with autoescaping; the
content comes from :mod:`perceptron_lab.report.tables` (the same collection the Markdown report uses).
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from perceptron_lab.config import plugins
from perceptron_lab.report.causes import VOCABULARY
from perceptron_lab.run.comparison import compared, scored
from perceptron_lab.run.store import atomic_write_text

#: Cell status -> (label, colour). Within tolerance, outside by cause, then cells not scored.
STATUS = {
    "within": ("within tolerance", "#2e9e4f"),
    "sampling": ("outside: sampling", "#a6d96a"),
    "data-copy": ("outside: data copy", "#fdae61"),
    "data-copy-inferred": ("outside: data copy (inferred)", "#fee08b"),
    "protocol-unspecified": ("outside: protocol unspecified", "#b98ad6"),
    "paper-inconsistent": ("outside: paper inconsistent", "#6baed6"),
    "unexplained": ("outside: unexplained", "#d7191c"),
    "not-scored": ("compared, not scored", "#d9d9d9"),
    "ours-only": ("ours only (the paper prints none)", "#ffffff"),
    "paper-only": ("the paper's only (no value of ours)", "#f7f7f7"),
}
#: Statuses a heat-map shows (cells with both values).
HEAT = [k for k in STATUS if k not in ("ours-only", "paper-only")]
#: Metrics that are counts (shown without decimals).
COUNT_METRICS = {"mistakes", "support_vectors", "corrections", "n_datasets"}


def _causes_text(counts: dict) -> str:
    return ", ".join(f"{k} {counts[k]}" for k in VOCABULARY if counts.get(k))


def _tally(tables) -> tuple[int, int, int, int, dict]:
    """(within, in scope, compared, consistent with sampling, cause counts) over tables."""
    ok = n = both = cons = 0
    causes: dict = {}
    for t in tables:
        a, b, c = t.counts
        ok, n, both, cons = ok + a, n + b, both + c, cons + t.n_consistent
        for k, v in t.cause_counts().items():
            causes[k] = causes.get(k, 0) + v
    return ok, n, both, cons, causes


def unscored_cells(tables) -> list[tuple]:
    """The in-scope cells with the paper's value and a tolerance that no run of ``tables`` has a value
    for, once each: ``(table number, block, row, column, detail)``. A paper whose table is filled by
    several runs (each writing the whole layout) has a cell scored once and left empty by the others;
    only a cell no run scores is returned."""
    key = ["table", "block", "row", "column", "metric"]
    scored_keys = {(t.paper, *(str(v) for v in r)) for t in tables for r in t.scoped[key].itertuples(index=False)}
    out, seen = [], set()
    for t in tables:
        base = t.baseline
        for i, r in t.unscored.iterrows():
            k = (t.paper, *(str(r[c]) for c in key))
            if k in scored_keys or k in seen:
                continue
            seen.add(k)
            why = str(r.get("detail")).strip() if pd.notna(r.get("detail")) else ""
            out.append((t.number, r["block"], r["row"], r["column"],
                        why or ("a baseline plab does not run" if bool(base.loc[i]) else "")))
    return out


def unscored_text(tables, sep: str = "; ") -> str:
    """Beside a count: how many in-scope cells with the paper's value and a tolerance have no value of
    ours (:func:`unscored_cells`), so are not in its denominator, where and why (the comparison's
    ``detail``); empty when none."""
    cells = unscored_cells(tables)
    if not cells:
        return ""
    groups: dict = {}   # (table, row, why) -> [(block, column)]
    for n, b, r, c, why in cells:
        groups.setdefault((n, r, why), []).append((b, c))
    rows = []
    for (n, r, why), where in groups.items():
        cols = sorted({str(c) for _, c in where})
        if len(where) <= 4 and len(cols) == 1:
            text = f"Table {n} {' and '.join(str(b) for b, _ in where)} / {r} / {cols[0]}"
        else:
            text = f"Table {n} {r}: {len(where)} cells"
        rows.append(text + (f" ({why})" if why else ""))
    return (f"{sep}{len(cells)} more cell{'s' if len(cells) > 1 else ''} with a tolerance not scored, no value of "
            f"ours: {', '.join(rows)}")


def family_tally(tables) -> tuple[int, int, int, int]:
    """(perceptron-family cells within tolerance, perceptron-family cells, baseline cells within,
    baseline cells) over tables' in-scope cells (baselines: the paper plug-in's ``baseline_cells``)."""
    fok = fn = 0
    for t in tables:
        a, b = t.family_counts
        fok, fn = fok + a, fn + b
    ok, n = sum(t.counts[0] for t in tables), sum(t.counts[1] for t in tables)
    return fok, fn, ok - fok, n - fn


def family_text(tables, sep: str = "; ") -> str:
    """``the perceptron family: a/b, baselines (majority class, SVM): c/d`` (empty without baselines)."""
    fok, fn, bok, bn = family_tally(tables)
    if not bn:
        return ""
    return f"{sep}the perceptron family alone: {fok}/{fn}, its baselines (majority class, SVM): {bok}/{bn}"


def _two_sample_tally(tables) -> tuple[int, int]:
    """(consistent by the two-sample check, scored cells where the paper prints its spread) over tables."""
    ok = n = 0
    for t in tables:
        a, b = t.two_sample
        ok, n = ok + a, n + b
    return ok, n


def two_sample_text(ok: int, n: int, sep: str = "") -> str:
    """``consistent by a two-sample check: N / M where the paper prints its spread`` (empty when the
    paper prints no spread for any of the cells), preceded by ``sep``."""
    return f"{sep}consistent by a two-sample check: {ok}/{n} where the paper prints its spread" if n else ""


def _env() -> Environment:
    env = Environment(loader=PackageLoader("perceptron_lab", "templates"), autoescape=select_autoescape(),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["inline"] = inline
    return env


def inline(text: str) -> Markup:
    """The report's light Markdown (``**bold**``, ```code```, ``*italic*``) as escaped HTML."""
    s = str(Markup.escape(text))
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    s = re.sub(r"`(.+?)`", r"<code>\1</code>", s)
    s = re.sub(r"(?<![\w*])\*(\S.*?)\*(?![\w*])", r"<i>\1</i>", s)
    return Markup(s)


def _isnum(v) -> bool:
    try:
        return v is not None and v is not pd.NA and not math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def fmt(v, metric: str = "") -> str:
    """A value for a cell: counts and values >= 100 without decimals, else two decimals."""
    if not _isnum(v):
        return ""
    x = float(v)
    if metric in COUNT_METRICS or abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.2f}"


def fmt_std(v, metric: str = "") -> str:
    """A standard deviation: as :func:`fmt`, with one decimal for counts below 10."""
    if _isnum(v) and (metric in COUNT_METRICS or abs(float(v)) >= 100) and abs(float(v)) < 10:
        return f"{float(v):.1f}"
    return fmt(v, metric)


def _paper_fmt(v) -> str:
    if not _isnum(v):
        return ""
    return f"{float(v):g}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower()


def table_anchor(t) -> str:
    return "t-" + slug(f"{t.name}-{t.run_dir.name}")


def table_title(t) -> str:
    """A table in words: ``Freund & Schapire Table 1, d4 (run fs1999/d4)``."""
    p = plugins.get(t.paper)
    m = re.match(r"^.+?_table(\d+)_?(.*)$", t.name)
    if not m:
        return t.name
    what = f"{p.short} Table {m.group(1)}"
    # the run folder tells apart the runs of one table (kw2007/table3_usps, gentile2001/mnist_d4)
    where = m.group(2).replace("_", " ") if m.group(2) else (
        "all runs combined" if t.run_dir.name == t.paper else t.run_dir.name.replace("_", " "))
    return f"{what}, {where}" + (" (variant)" if t.variant else "")


def statuses(t) -> pd.Series:
    """Each comparison row's status (a key of :data:`STATUS`)."""
    c = t.comparison
    both = compared(c)
    s = pd.Series("ours-only", index=c.index, dtype=object)
    s[c["paper"].notna() & ~both] = "paper-only"
    s[both] = "not-scored"
    sc = scored(c)
    s[sc & (c["within"] == True)] = "within"  # noqa: E712
    if t.causes is not None and len(t.causes):
        s.loc[t.causes.index] = t.causes["cause"].values
    s[~sc & both] = "not-scored"
    return s


def _hover(r, status: str, note: str) -> str:
    metric = r["metric"]
    parts = [f"{r['block']} / {r['row']} / {r['column']}".strip(" /"), f"metric: {metric or '?'}",
             f"paper: {_paper_fmt(r['paper']) or 'none'}"]
    if _isnum(r["ours_mean"]):
        ours = fmt(r["ours_mean"], metric)
        if _isnum(r["ours_std"]):
            ours += f" ± {fmt_std(r['ours_std'], metric)}"
        parts.append(f"ours: {ours} over {int(r['n_runs'])} run(s)")
    else:
        parts.append("ours: none")
    if _isnum(r["diff"]) and _isnum(r["paper"]):
        parts.append(f"diff: {float(r['diff']):+.3g}")
    parts.append(f"tolerance: {_paper_fmt(r['tolerance']) or 'none'}")
    parts.append(f"status: {STATUS[status][0]}")
    if note:
        parts.append(f"cause: {note}")
    return "\n".join(parts)


def cells(t) -> list[dict]:
    """One dict per comparison row: its place, text, status and hover text."""
    c, st = t.comparison, statuses(t)
    notes = t.causes["cause_note"] if t.causes is not None and len(t.causes) else pd.Series(dtype=object)
    out = []
    for idx, r in c.iterrows():
        status = st.loc[idx]
        text = fmt(r["ours_mean"], r["metric"])
        if text and _isnum(r["ours_std"]) and r["n_runs"] > 1:
            text += f" ± {fmt_std(r['ours_std'], r['metric'])}"
        if _isnum(r["paper"]):
            text += f" ({_paper_fmt(r['paper'])})"
        out.append({"block": r["block"], "row": r["row"], "column": r["column"], "status": status,
                    "text": text.strip(), "title": _hover(r, status, str(notes.get(idx, "") or ""))})
    return out


def grid(t) -> dict:
    """The comparison pivoted to the paper's shape: rows (block, row), columns in the order written."""
    cs = cells(t)
    columns = list(dict.fromkeys(c["column"] for c in cs))
    rows: dict = {}
    for c in cs:
        rows.setdefault((c["block"], c["row"]), {})[c["column"]] = c
    blocks = any(b for b, _ in rows)
    return {"columns": columns, "has_block": blocks,
            "rows": [{"block": b, "row": r, "cells": [cols.get(k) for k in columns]} for (b, r), cols in rows.items()]}


def heat(t) -> list[dict]:
    """The compared cells in grid order, for the landing page's heat-map (a short hover text)."""
    return [{"status": c["status"], "title": " / ".join(x for x in (c["block"], c["row"], c["column"]) if x)
             + f": {c['text']}, {STATUS[c['status']][0]}"} for c in cells(t) if c["status"] in HEAT]


def _relpath(path: Path, out: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), out.resolve())).as_posix()


def _table_row(t, page: str) -> dict:
    ok, n, both = t.counts
    return {"title": table_title(t), "href": f"{page}#{table_anchor(t)}", "run": str(t.run_dir),
            "variant": t.variant, "ok": ok, "n": n, "both": both, "consistent": t.n_consistent,
            "causes": _causes_text(t.cause_counts()), "heat": heat(t)}


def _paper_totals(rep, paper: str) -> list[dict]:
    tabs = [t for t in rep.tables if t.paper == paper and not t.variant]
    rows = []
    for number in sorted({t.number for t in tabs if t.number is not None}):
        group = [t for t in tabs if t.number == number]
        ok, n, both, cons, causes = _tally(group)
        if n:
            rows.append({"what": f"Table {number}", "ok": ok, "n": n, "both": both, "consistent": cons,
                         "causes": _causes_text(causes),
                         "two_sample": two_sample_text(*_two_sample_tally(group), sep=", ")})
    if tabs:
        ok, n, both, cons, causes = _tally(tabs)
        rows.append({"what": "the paper's settings", "ok": ok, "n": n, "both": both, "consistent": cons,
                     "causes": _causes_text(causes), "total": True,
                     "two_sample": two_sample_text(*_two_sample_tally(tabs), sep=", ")})
    return rows


def _layout(df: pd.DataFrame) -> dict:
    return {"columns": [str(c) for c in df.columns], "rows": [[str(v) for v in r] for r in df.values.tolist()]}


def _outside_rows(tabs) -> list[dict]:
    rows = []
    for t in tabs:
        for _, r in t.causes.iterrows():
            rows.append({"table": table_title(t), "href": f"#{table_anchor(t)}", "block": r["block"],
                         "row": r["row"], "column": r["column"], "metric": r["metric"],
                         "paper": _paper_fmt(r["paper"]), "ours": fmt(r["ours_mean"], r["metric"]),
                         "std": fmt_std(r["ours_std"], r["metric"]), "diff": f"{float(r['diff']):+.3g}",
                         "tolerance": _paper_fmt(r["tolerance"]), "cause": r["cause"], "note": r["cause_note"]})
    return rows


def study_page(env, title: str, items: list, out: Path, standalone: bool = False) -> str:
    """A study's page from its report items (``("h1"|"h2"|"h3"|"p", text)``, ``("ul", lines)``,
    ``("table", frame)``, ``("img", path)``); ``standalone``: a landing page of its own (the report
    of your runs when no paper run is given), without the link back to the papers."""
    rows = []
    for kind, x in items:
        if kind == "table":
            rows.append({"kind": kind, "table": _layout(x.astype(object).fillna(""))})
        elif kind == "img":
            rows.append({"kind": kind, "src": _relpath(Path(x), out), "alt": Path(x).name})
        elif kind == "ul":
            rows.append({"kind": kind, "lines": [ln[2:] if ln.startswith("- ") else ln for ln in x]})
        else:
            rows.append({"kind": kind, "text": x})
    return env.get_template("study.html").render(title=title, items=rows, status=STATUS, standalone=standalone)


def pages(rep, out: Path, text: dict, studies=()) -> dict[str, str]:
    """File name -> HTML of every page: ``index.html`` and ``<paper>.html`` per paper with results,
    and one page per study (``studies``: (file name, title, report items)).
    ``text``: the report's bullet lists (``scoring``, ``protocol``, ``cause_lines``, ``missing``,
    ``reproductions``, ``runs``, ``damaged``) and ``damage_note``, as :mod:`perceptron_lab.report.tables`
    writes them for the Markdown: a damaged run is marked in a box under the landing page's total,
    in the totals' line (``damaged: 1 run not counted``) and in the list of runs."""
    env = _env()
    out = Path(out)
    papers = []
    result: dict[str, str] = {}
    for p in plugins.papers():
        tabs = [t for t in rep.tables if t.paper == p.name]
        figs = [f for f in rep.figures if f.name.startswith(p.name)]
        if not tabs and not figs:
            continue
        page = f"{p.name}.html"
        rows = [_table_row(t, page) for t in tabs]
        entry = {"name": p.name, "title": p.title, "short": p.short, "page": page, "tables": rows,
                 "totals": _paper_totals(rep, p.name),
                 "heat": [c for t, r in zip(tabs, rows) if not t.variant for c in r["heat"]]}
        papers.append(entry)
        sections = []
        for t in tabs:
            notes = [n[2:] if n.startswith("- ") else n for n in (p.table_notes(t) if p.table_notes else [])]
            ok, n, both = t.counts
            sections.append({"anchor": table_anchor(t), "title": table_title(t), "stem": t.name,
                             "run": str(t.run_dir), "ok": ok, "n": n, "both": both,
                             "consistent": t.n_consistent, "notes": notes, "grid": grid(t),
                             "two_sample": two_sample_text(*t.two_sample, sep=", "),
                             "layout": _layout(t.layout) if not t.layout.empty else None,
                             "causes": entry["tables"][len(sections)]["causes"]})
        figures = []
        for f in figs:
            where = "" if f.parent.name == p.name else f", {f.parent.name.replace('_', ' ')}"
            figures.append({"anchor": "f-" + slug(f.stem + "-" + f.parent.name), "src": _relpath(f, out),
                            "title": p.figures.get(f.stem, f.stem) + where, "path": _relpath(f, out)})
        result[page] = env.get_template("paper.html").render(
            paper=entry, scoring=p.scoring_rule(), sections=sections, figures=figures,
            outside=_outside_rows(tabs), status=STATUS, vocabulary=VOCABULARY)
    main = [t for t in rep.tables if not t.variant]
    ok, n, both, cons, causes = _tally(main)
    overall = {"ok": ok, "n": n, "both": both, "consistent": cons, "causes": _causes_text(causes)}
    links = []
    for name, title, items in studies:
        result[name] = study_page(env, title, items, out)
        links.append({"page": name, "title": title})
    result["index.html"] = env.get_template("index.html").render(
        papers=papers, overall=overall, status=STATUS, heat_status=HEAT, vocabulary=VOCABULARY, studies=links,
        **text)
    return result


def write_pages(rep, out, text: dict, studies=()) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in pages(rep, out, text, studies).items():
        atomic_write_text(out / name, page)
        written.append(out / name)
    return written


__all__ = ["STATUS", "pages", "write_pages", "grid", "cells", "statuses", "table_title", "table_anchor"]
