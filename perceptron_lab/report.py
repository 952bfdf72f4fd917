"""The paper-vs-ours report: ``plab report [RESULTS_DIR...] --out results/report``.

Reads what runs wrote next to their results — the paper-layout tables (``<paper>_table*.csv``),
their long comparisons (``*_comparison.csv``: one row per cell with the paper's value, ours,
the difference and whether it is within the table's tolerance) and figures (``*.png``) — plus
each run's ``run.json`` (machine, versions, run times), and writes one Markdown file and one
self-contained HTML page (figures embedded).
"""

from __future__ import annotations

import base64
import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

PAPERS = {
    "fs1999": "Freund & Schapire (1999): the voted perceptron on MNIST",
    "kw2007": "Khardon & Wachman (2007): noise-tolerant perceptron variants",
    "gentile2001": "Gentile (2001): ALMA_p",
}


@dataclass
class TableResult:
    paper: str
    name: str          # file stem, e.g. fs1999_table1_d4
    run_dir: Path
    layout: pd.DataFrame
    comparison: pd.DataFrame

    @property
    def scoped(self) -> pd.DataFrame:
        c = self.comparison
        m = c["paper"].notna()
        if "n_runs" in c:
            m &= c["n_runs"].fillna(0) > 0
        if "in_scope" in c:
            m &= c["in_scope"].astype(str).str.lower().isin(["true", "1"])
        return c[m]

    @property
    def counts(self) -> tuple[int, int, int]:
        """(in-scope cells within tolerance, in-scope cells compared, all cells with both values)."""
        s = self.scoped
        both = self.comparison["paper"].notna()
        if "n_runs" in self.comparison:
            both &= self.comparison["n_runs"].fillna(0) > 0
        within = s["within"].astype(str).str.lower().isin(["true", "1"]).sum()
        return int(within), int(len(s)), int(both.sum())


@dataclass
class Report:
    tables: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    runs: list = field(default_factory=list)


def find_run_dirs(paths) -> list[Path]:
    """Every folder holding a run.json under the given paths (a run folder itself counts)."""
    dirs = set()
    for p in map(Path, paths):
        if (p / "run.json").exists():
            dirs.add(p)
        dirs.update(q.parent for q in p.rglob("run.json") if "golden" not in q.parts)
    return sorted(dirs)


def collect(paths) -> Report:
    rep = Report()
    for d in find_run_dirs(paths):
        try:
            info = json.loads((d / "run.json").read_text())
        except (OSError, ValueError):
            continue
        rep.runs.append((d, info))
        for comp in sorted(d.glob("*_comparison.csv")):
            stem = comp.name[: -len("_comparison.csv")]
            paper = stem.split("_", 1)[0]
            layout_p = d / f"{stem}.csv"
            layout = pd.read_csv(layout_p, dtype=str, keep_default_na=False) if layout_p.exists() else pd.DataFrame()
            rep.tables.append(TableResult(paper, stem, d, layout, pd.read_csv(comp)))
        rep.figures.extend(sorted(d.glob("*.png")))
    return rep


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(no layout)_\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(v).replace("|", "/") for v in row.values) + " |")
    return "\n".join(lines) + "\n"


def summary_lines(rep: Report) -> list[str]:
    lines = []
    tot_ok = tot_n = 0
    for t in rep.tables:
        ok, n, both = t.counts
        tot_ok += ok
        tot_n += n
        lines.append(f"- `{t.name}` ({t.run_dir}): **{ok}/{n}** in-scope cells within tolerance; "
                     f"{both} cells compared in all")
    lines.append(f"- **Overall: {tot_ok}/{tot_n} in-scope cells within tolerance**")
    return lines


def outside_tolerance(rep: Report) -> pd.DataFrame:
    rows = []
    for t in rep.tables:
        s = t.scoped
        bad = s[~s["within"].astype(str).str.lower().isin(["true", "1"])]
        for _, r in bad.iterrows():
            rows.append({"table": t.name, **{k: r.get(k) for k in ("block", "row", "T", "paper", "ours_mean",
                                                                 "ours_std", "diff", "tolerance")}})
    return pd.DataFrame(rows)


def run_lines(rep: Report) -> list[str]:
    out = []
    for d, info in rep.runs:
        v = info.get("versions", {})
        out.append(f"- `{d}`: {info.get('name')}, {info.get('units')} runs, wall {info.get('wall_seconds', '?')} s "
                   f"(training {info.get('train_seconds_total', '?')} s, evaluation {info.get('eval_seconds_total', '?')} s); "
                   f"finished {info.get('finished', '?')}; perceptron_lab {v.get('perceptron_lab')}, numpy {v.get('numpy')}, "
                   f"numba {v.get('numba')}, {v.get('cpus')} CPUs, {v.get('platform')}; git {info.get('git_revision')}")
    return out


def write_report(paths, out_dir) -> tuple[Path, Path]:
    rep = collect(paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# perceptron_lab: the papers' tables next to ours", "",
          "Each cell: our mean ± standard deviation over permutations or folds, the paper's value in "
          "parentheses. Tolerances are those of the reproduction issues (Freund & Schapire: test error "
          "within max(0.3 points, 10% of the paper's value), counts within 10%, for d >= 2 and T >= 1).", "",
          "## Summary", ""] + summary_lines(rep) + [""]
    bad = outside_tolerance(rep)
    if not bad.empty:
        md += ["### In-scope cells outside tolerance", "", _md_table(bad), ""]
    for paper, title in PAPERS.items():
        tabs = [t for t in rep.tables if t.paper == paper]
        figs = [f for f in rep.figures if f.name.startswith(paper)]
        if not tabs and not figs:
            continue
        md += [f"## {title}", ""]
        for t in tabs:
            ok, n, both = t.counts
            md += [f"### {t.name}", "", f"{ok}/{n} in-scope cells within tolerance ({both} compared). "
                   f"Source: `{t.run_dir}`", "", _md_table(t.layout), ""]
        for f in figs:
            rel = Path(os.path.relpath(f.resolve(), out.resolve()))
            md += [f"![{f.name}]({rel.as_posix()})", ""]
    md += ["## Runs, machine and versions", ""] + run_lines(rep) + [""]
    md_path = out / "report.md"
    md_path.write_text("\n".join(md))

    h = ["<!doctype html><html><head><meta charset='utf-8'><title>perceptron_lab report</title>",
         "<style>body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
         "table{border-collapse:collapse;font-size:13px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px}"
         "th{background:#f3f3f3}img{max-width:100%}</style></head><body>",
         "<h1>perceptron_lab: the papers' tables next to ours</h1>", "<h2>Summary</h2><ul>"]
    h += [f"<li>{html.escape(l[2:]).replace('**', '')}</li>" for l in summary_lines(rep)] + ["</ul>"]
    if not bad.empty:
        h += ["<h3>In-scope cells outside tolerance</h3>", bad.to_html(index=False)]
    for paper, title in PAPERS.items():
        tabs = [t for t in rep.tables if t.paper == paper]
        figs = [f for f in rep.figures if f.name.startswith(paper)]
        if not tabs and not figs:
            continue
        h.append(f"<h2>{html.escape(title)}</h2>")
        for t in tabs:
            ok, n, both = t.counts
            h += [f"<h3>{html.escape(t.name)}</h3><p>{ok}/{n} in-scope cells within tolerance "
                  f"({both} compared). Source: <code>{html.escape(str(t.run_dir))}</code></p>",
                  t.layout.to_html(index=False) if not t.layout.empty else "<p>(no layout)</p>"]
        for f in figs:
            b64 = base64.b64encode(f.read_bytes()).decode()
            h.append(f"<figure><img src='data:image/png;base64,{b64}'><figcaption>{html.escape(str(f))}"
                     "</figcaption></figure>")
    h += ["<h2>Runs, machine and versions</h2><ul>"] + [f"<li>{html.escape(l[2:])}</li>" for l in run_lines(rep)]
    h += ["</ul></body></html>"]
    html_path = out / "report.html"
    html_path.write_text("\n".join(h))
    return md_path, html_path


def compare_text(run_dir) -> str:
    """The comparison of one run folder, for the terminal."""
    rep = collect([run_dir])
    if not rep.tables:
        return f"{run_dir}: no paper tables found (they are written for runs a paper reports)"
    out = []
    for t in rep.tables:
        ok, n, both = t.counts
        out.append(f"{t.name}: {ok}/{n} in-scope cells within tolerance ({both} compared)")
        c = t.comparison
        show = [k for k in ("block", "row", "T", "paper", "ours_mean", "ours_std", "diff", "tolerance", "within",
                            "in_scope") if k in c]
        out.append(c[show].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
        out.append("")
    return "\n".join(out)
