"""The paper-vs-ours report: ``plab report [RESULTS_DIR...] --out results/report``.

Reads what runs wrote next to their results — the paper-layout tables (``<paper>_table*.csv``),
their long comparisons (``*_comparison.csv``, one row per cell in the schema of
:mod:`perceptron_lab.run.comparison`: the paper's value, ours, the difference, the tolerance, whether
ours is within it and whether the cell is scored) and figures (``<paper>_figure*.png``) — plus
each run's ``run.json`` (machine, versions, run times), and writes one Markdown file
(``report.md``) and HTML pages (``index.html``, the landing page, and one page per paper; see
:mod:`perceptron_lab.report.html`) from the same content.

Every run folder (a folder holding ``run.json``) below the given paths is read, so tables that
later runs write (e.g. Gentile Tables 3-4 on MNIST, Khardon & Wachman Tables 5 and 7) appear
without changes here. Figures are read from anywhere below the paths (e.g. the combined
``results/fs1999/fs1999_figure2.png``). ``results/golden`` (the CI subset) is left out.

Damage is shown, never hidden. Every file read back is validated
(:func:`perceptron_lab.run.store.read_back_json`, :func:`perceptron_lab.run.store.read_back_csv`): a run
folder whose ``run.json``, a comparison or a layout is damaged (cut short, not UTF-8, not
parseable, rows shorter than the header, columns missing) gets one ``plab: warning:`` line, is
marked ``DAMAGED`` in the list of runs, and none of its tables is counted; the summary and the
landing page say how many runs were left out of the counts and why (``damaged: 1 run not
counted``). A damaged ``reproduce.json`` is marked the same way. A causes file that cannot be used
stops the report (exit status 2, as an invalid config).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from perceptron_lab.config import plugins
from perceptron_lab.report.causes import FILE_NAME as CAUSES_FILE
from perceptron_lab.report.causes import VOCABULARY, assign, load_rules
from perceptron_lab.run.comparison import compared, consistent, read_comparison, sampling_covers, scored, two_sample_checked, two_sample_ok
from perceptron_lab.model.exactness import exactness_note
from perceptron_lab.report.html import (_causes_text, _tally, _two_sample_tally, family_text, two_sample_text, unscored_text,
                                        write_pages)
from perceptron_lab.errors import DamagedFileError
from perceptron_lab.run.store import atomic_write_text, read_back_csv, read_back_json
from perceptron_lab.studies import budget as budget_study
from perceptron_lab.studies import dogma as dogma_study
from perceptron_lab.studies import kol as kol_study

def _table_match(name: str):
    """(paper name, table number) of an output or reference table stem ``<paper>_table<N>...``, or None."""
    m = re.match(r"^(.+?)_table(\d+)", name)
    if not m or m.group(1) not in plugins.names():
        return None
    return m.group(1), int(m.group(2))


@dataclass
class TableResult:
    paper: str
    name: str          # file stem, e.g. fs1999_table1_d4
    run_dir: Path
    layout: pd.DataFrame
    comparison: pd.DataFrame   # normalized (perceptron_lab.run.comparison)
    #: The in-scope cells outside tolerance with their ``cause`` and ``cause_note`` (see
    #: :mod:`perceptron_lab.report.causes`); filled by :func:`collect`.
    causes: pd.DataFrame | None = None

    @property
    def variant(self) -> bool:
        """A run of a setting the paper does not state (a folder below ``variants/``): shown, kept out
        of the paper's totals."""
        return "variants" in self.run_dir.parts

    @property
    def number(self) -> int | None:
        m = _table_match(self.name)
        return m[1] if m else None

    @property
    def scoped(self) -> pd.DataFrame:
        """The in-scope cells: both values, a tolerance, in scope."""
        return self.comparison[scored(self.comparison)]

    @property
    def counts(self) -> tuple[int, int, int]:
        """(in-scope cells within tolerance, in-scope cells, all cells with both values)."""
        s = self.scoped
        return int((s["within"] == True).sum()), int(len(s)), int(compared(self.comparison).sum())  # noqa: E712

    @property
    def unscored(self) -> pd.DataFrame:
        """In-scope cells with the paper's value and a tolerance but no value of ours (e.g. no grid value
        of an SVM converged): they leave the scored count, and the report says so beside it."""
        c = self.comparison
        return c[c["paper"].notna() & c["in_scope"].fillna(False).astype(bool) & c["tolerance"].notna()
                 & ~compared(c)]

    @property
    def baseline(self) -> pd.Series:
        """Which comparison rows hold a baseline, not a perceptron-family result (the paper plug-in's
        ``baseline_cells``; none when it has none)."""
        p = plugins.get(self.paper) if self.paper in plugins.names() else None
        if p is None or p.baseline_cells is None:
            return pd.Series(False, index=self.comparison.index)
        return p.baseline_cells(self.comparison).reindex(self.comparison.index, fill_value=False).astype(bool)

    @property
    def family_counts(self) -> tuple[int, int]:
        """(in-scope perceptron-family cells within tolerance, in-scope perceptron-family cells)."""
        s = self.scoped
        fam = s[~self.baseline.loc[s.index]]
        return int((fam["within"] == True).sum()), len(fam)  # noqa: E712

    @property
    def outside(self) -> pd.DataFrame:
        s = self.scoped
        return s[s["within"] != True]  # noqa: E712 (nullable boolean: NA counts as outside)

    @property
    def n_consistent(self) -> int:
        """In-scope cells within tolerance or whose paper value our sampling range covers."""
        return int(consistent(self.comparison).sum())

    @property
    def two_sample(self) -> tuple[int, int]:
        """(cells consistent by Welch's two-sample check, scored cells where the paper prints its
        spread): a second, separately labelled check that never changes the strict count."""
        c = self.comparison
        return int(two_sample_ok(c).sum()), int(two_sample_checked(c).sum())

    def cause_counts(self) -> dict:
        c = self.causes if self.causes is not None else pd.DataFrame(columns=["cause"])
        return {k: int(v) for k, v in c["cause"].value_counts().items()}


@dataclass
class Report:
    tables: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    runs: list = field(default_factory=list)
    reproductions: list = field(default_factory=list)  # (path, the reproduce.json log)
    causes_file: Path | None = None
    #: Rules of the causes file that match no cell outside tolerance.
    unused_rules: list = field(default_factory=list)
    #: The budget study's report items (:func:`perceptron_lab.studies.budget.report_items`), [] when not run.
    study_items: list = field(default_factory=list)
    #: (run folder or log, the one-line damage message) of every run or log left out of the counts.
    damaged: list = field(default_factory=list)

    @property
    def damaged_runs(self) -> int:
        return len(self.damaged)


def _skip(p: Path) -> bool:
    return "golden" in p.parts or "parts" in p.parts


def find_run_dirs(paths) -> list[Path]:
    """Every folder holding a run.json under the given paths (a run folder itself counts)."""
    dirs = set()
    for p in map(Path, paths):
        if (p / "run.json").exists():
            dirs.add(p)
        dirs.update(q.parent for q in p.rglob("run.json") if not _skip(q))
    return sorted(dirs)


def find_figures(paths) -> list[Path]:
    """The papers' figures (``<paper>_figure*.png``) below the given paths."""
    figs = set()
    for p in map(Path, paths):
        cands = [p] if p.is_file() else p.rglob("*.png")
        figs.update(f for f in cands if f.name.split("_", 1)[0] in plugins.names() and "_figure" in f.name and not _skip(f))
    return sorted(figs)


def warn(message: str) -> None:
    """One ``plab: warning:`` line on stderr."""
    print(f"plab: warning: {message}", file=sys.stderr, flush=True)


#: How to get a whole run.json or results.csv again.
RUN_FIX = "move it away and run the config again with plab run (the same --out reuses its finished parts)"


def _tables_fix(d: Path) -> str:
    return f"move it away and run 'plab tables {d}' to write it again from results.csv"


def read_run_tables(d: Path) -> tuple[dict, list]:
    """(run.json, the paper tables) of one run folder, every file validated;
    :class:`~perceptron_lab.errors.DamagedFileError` names the first damaged one."""
    info = read_back_json(d / "run.json", fix=RUN_FIX)
    rows = info.get("csv_rows") if isinstance(info.get("csv_rows"), dict) else {}
    tables = []
    for comp in sorted(d.glob("*_comparison.csv")):
        stem = comp.name[: -len("_comparison.csv")]
        paper = stem.split("_", 1)[0]
        if paper not in plugins.names():
            continue
        layout_p = d / f"{stem}.csv"
        layout = (read_back_csv(layout_p, fix=_tables_fix(d), rows=rows.get(layout_p.name)) if layout_p.exists()
                  else pd.DataFrame())
        tables.append(TableResult(paper, stem, d, layout,
                                  read_comparison(comp, fix=_tables_fix(d), rows=rows.get(comp.name))))
    return info, tables


def collect(paths, warn=warn, strict: bool = False) -> Report:
    """Every run folder, table, figure and reproduction log below ``paths``. A damaged run folder
    or log is warned about (``warn``), listed in ``Report.damaged`` and left out of the counts;
    with ``strict`` (``plab compare``, which shows one run's cells) it stops the command instead
    (:class:`~perceptron_lab.errors.DamagedFileError`, exit status 1)."""
    rep = Report()
    for p in paths:
        try:
            rep.study_items = budget_study.report_items(p) + dogma_study.report_items(p) + kol_study.report_items(p)
        except DamagedFileError as exc:
            if strict:
                raise
            warn(f"{exc}; the budget study is not shown")
            rep.damaged.append((Path(p) / budget_study.STUDY_DIR, str(exc)))
            continue
        if rep.study_items:
            break
    for d in find_run_dirs(paths):
        try:
            info, tables = read_run_tables(d)
        except DamagedFileError as exc:
            if strict:
                raise
            warn(f"{exc}; run {d} is marked damaged and not counted")
            rep.damaged.append((d, str(exc)))
            rep.runs.append((d, {"damaged": str(exc)}))
            continue
        rep.runs.append((d, info))
        rep.tables += tables
    rep.figures = find_figures(paths)
    for p in map(Path, paths):
        log = p / "reproduce.json"
        if p.is_dir() and log.is_file():
            try:
                content = read_back_json(log, fix=LOG_FIX)
            except DamagedFileError as exc:
                if strict:
                    raise
                warn(f"{exc}; its run times are not shown")
                rep.damaged.append((log, str(exc)))
                continue
            rep.reproductions.append((log, content))
    _assign_causes(rep, paths)
    return rep


def _assign_causes(rep: Report, paths) -> None:
    """Give every in-scope cell outside tolerance its cause, from the first causes file found in
    ``paths`` (or in a parent of a run folder given directly, e.g. ``results/``)."""
    cands = []
    for p in map(Path, paths):
        cands += [p / CAUSES_FILE] + [q / CAUSES_FILE for q in p.resolve().parents]
    rep.causes_file = next((c for c in cands if c.is_file()), None)
    rules = load_rules(rep.causes_file) if rep.causes_file else []
    used: set = set()
    for t in rep.tables:
        out = t.outside
        t.causes = assign(out, sampling_covers(out), t.name, t.run_dir.name, rules, used)
    rep.unused_rules = [r for k, r in enumerate(rules) if k not in used]


#: How to get a whole reproduction log again.
LOG_FIX = "move it away (the times it held are lost) and run the reproduction again"


def read_log(log_path) -> dict:
    """A reproduction log (``results/reproduce.json``); empty when missing,
    :class:`~perceptron_lab.errors.DamagedFileError` when damaged."""
    if not Path(log_path).is_file():
        return {}
    return read_back_json(log_path, fix=LOG_FIX)


def recorded_seconds(configs: dict) -> dict:
    """Wall seconds per config of a reproduction log's ``configs``, for the configs computed from
    scratch (every unit ran, none was reused)."""
    return {c: float(t["wall_seconds"]) for c, t in configs.items()
            if t.get("ran") and not t.get("reused") and t.get("wall_seconds") is not None}


# ----------------------------------------------------------------------------- content


def _num(v) -> str:
    """A number for a table cell: empty when missing, integers without decimals, else <= 3 decimals."""
    if v is None or v is pd.NA:
        return ""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return ""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.3f}".rstrip("0").rstrip(".")


def scoring_rules() -> list[str]:
    """How cells are scored: each paper's rule, from its plug-in's tolerances, and the shared rules."""
    return [f"- **{p.short}** ({', '.join(t.replace('table', 'Table ') for t in p.tables)}): {p.scoring_rule()}"
            for p in plugins.papers()] + [
        "- *Consistent with sampling*: in-scope cells within tolerance, or whose paper value lies in the range "
        "our own re-sampling gives: the central 95% of independent draws of a generated data set, of "
        "cross-validation fold assignments, of training orders or of Table 5's N examples and orders (Khardon & "
        "Wachman Tables 3 UCI, 4, 5, 6 artificial and 7 Adult and USPS), else the 95% interval of our mean over "
        "folds or permutations. The strict count is the headline.",
        "- *Consistent by a two-sample check* (a second, separately labelled check; it never changes the strict "
        "count): where the paper prints its own spread (Khardon & Wachman Table 5's standard deviations, Table 6's "
        "95% T-intervals), Welch's t-test at the 5% level on the two means, with each side's standard error from "
        "its spread over its 10 folds (footnote 5's convention) and the Welch-Satterthwaite degrees of freedom; "
        "counted as N / M over the scored cells where the paper prints its spread (column "
        "`two_sample_consistent` of the comparisons; `perceptron_lab/run/comparison.py` states the test).",
        "- *In-scope* cells have the paper's value, ours and a tolerance, and fall under the rules above; "
        "*compared* counts every cell with both values (in scope or not). Cells only one side has are shown in the "
        "layouts as `n/a`.",
    ]


def protocol_notes() -> list[str]:
    """Protocol choices read from the papers, and the assumptions where they are silent (each
    config's comment cites the passage; the alternatives run as variants below ``variants/``)."""
    return [
        "- **Khardon & Wachman, the threshold's sign.** Figures 1 and 2 print theta <- theta + eta y C. With the "
        "prediction sign(<w, x> - theta) that is a typo: a positive update must lower the threshold. Run literally "
        "on the paper's noise-free artificial data (f = 50, M = 0.05, N = 0, 10-fold CV), the printed sign gives "
        "62.0%, the majority class, and the corrected one 94.8% (the paper's Table 4: 95.4%); "
        "`tests/papers/kw2007/test_kw.py::test_printed_threshold_sign_is_a_typo` runs both. plab uses theta - eta y C.",
        "- **Khardon & Wachman, Tables 3 and 5: 10-fold cross-validation** (\"except where noted, all the results "
        "... 10-fold cross-validation\", §3.2) over the data sets of Table 1: Adult's 32561 examples of "
        "adult.data, USPS's 9298 and MNIST's 70000. The 7291/2007 and 60000/10000 splits are named for parameter "
        "optimization only, where there is no outer cross-validation (§3.1; Table 7). Table 5 trains each fold on "
        "N examples drawn at random from its training part. Variants: the splits (`table3_usps_split`, "
        "`table3_mnist_split`).",
        "- **Khardon & Wachman, Adult's scaling (assumption, chosen because it fits).** The paper does not say how "
        "the six continuous attributes were scaled. plab scales them to [0, 1] (min-max on the training part) "
        "because that fits the paper's Adult numbers; the paper does not imply it. The argument \"the range of "
        "the 0/1 indicators that make up the other 99 features\" would scale crx the same way, and crx scaled so "
        "lands far above every crx cell the paper prints (`configs/kw2007/scaling_crx_minmax.yaml`), so the paper "
        "ran crx in raw units. In raw units Adult's fnlwgt (up to 1.5e6) swamps the indicators. Variants: raw "
        "units and standardized features (`table5_raw_units`, `table5_standardized`).",
        "- **Khardon & Wachman, the lambda-trick (assumption, two readings).** Eq. (1) and Figure 2 print the "
        "term as I_(alpha_j != 0) y_j lambda ||x_j||^2: a constant once x_j has caused an update (`indicator`). "
        "The paper attributes the trick to Kowalczyk et al. (2001) and Li et al. (2002) (§2.2), which add lambda "
        "to the kernel's diagonal in the dual form, and says its only departure from them is the scale: \"this "
        "technique is typically presented using an additive lambda instead of lambda ||x_j||^2. While there is "
        "no fundamental difference, adding lambda ||x_j||^2 is more convenient\" (§2.2). It also says the "
        "algorithms are presented in primal form though they run in dual form with kernels (§2.1). On the "
        "diagonal, each update on x_j adds eta y_j lambda ||x_j||^2 to its own score, so the term is "
        "eta alpha_j y_j lambda ||x_j||^2 and grows with the updates (`diagonal`). The paper's own numbers behave "
        "like it: in Table 4 at N = 0 its lambda column is 95.6 against 95.4 for Nothing (with eta = 0.1 the "
        "diagonal term starts ten times weaker than eq. (1)'s), and on bupa its Last, Longest and Voted differ "
        "in the lambda column, where plab's runs of eq. (1) give them equal (training stops). plab scores `diagonal` "
        "(`algorithm.lambda_term`, set in `configs/kw2007/search.yaml` for Tables 3 UCI and USPS, 4 and 6, and "
        "in Table 7's Adult and USPS configs; the one-pass MNIST runs are the same in both readings) and runs "
        "eq. (1) as printed on the cells with lambda > 0 as variants (`table3_uci_lambda_indicator`, "
        "`table4_lambda_indicator`), whose counts are listed beside the scored ones over the same cells; the "
        "other tables' `configs/kw2007/lambda_indicator_*.yaml` run it by hand. `tests/papers/kw2007/test_kw_lambda.py` checks both "
        "readings against the slow reference.",
        "- **Khardon & Wachman, the alpha-bound's count (Figure 2's reading).** §2.3 words the bound as \"it does "
        "not update w if more than alpha mistakes have already been made on x_i\", which allows alpha + 1 updates "
        "on an example; Figure 2 updates only while alpha_i < alpha-bound, alpha_i counting the updates: at most "
        "alpha. plab runs Figure 2, the algorithm as printed. The text's reading is Figure 2's with the bound "
        "alpha + 1, and runs by hand on the alpha columns of Tables 3 (UCI), 4 and 6 "
        "(`configs/kw2007/alpha_bound_text_*.yaml`, not part of make reproduce).",
        "- **Khardon & Wachman, promoters' instance name (assumption, the text's reading).** §3.1: \"Since we "
        "require numerical attributes, any nominal attribute in these data sets was translated to a set of binary "
        "attributes each being an indicator function for one of the values.\" UCI's promoters.names lists 59 "
        "attributes, \"class (positive or negative)\", \"instance name\" and \"57 sequential nucleotide "
        "(\"base-pair\") positions\", attribute 2 being \"The instance name (non-promoters named by position in "
        "the 1500-long nucleotide sequence provided by T. Record)\", and says \"No numeric features used\": the "
        "name is a nominal attribute, and the text expands every nominal attribute. plab scores that reading "
        "(`dataset.instance_name: nominal` in `configs/kw2007/table3_uci.yaml`: 106 + 228 features). Every one of "
        "the 106 names is different, so each example gets an indicator of its own: during training it adds 1 to "
        "K(x, x) of its own example only (like the lambda-trick's term on the kernel's diagonal, with an additive 1), "
        "and a test example's indicator meets a weight of 0. Promoters has no row in Table 1, so no printed "
        "feature count confirms it; the numeric identifiers of breast-cancer-wisconsin, wdbc and wpbc are "
        "dropped, as Table 1's counts show. The name left out (228 features) runs as the variant "
        "`table3_uci_promoters_name_dropped`, listed with its count.",
        "- **Khardon & Wachman, Table 4's weight vector (assumption).** §3.1: \"We generated the weight vector, "
        "w, by flipping a coin for each example and adding it to the weight vector on a head.\" plab reads it "
        "per feature (a head adds one to that feature's weight: `dataset.params.weight_rule: feature`), taking "
        "\"example\" for \"feature\"; the sentence taken literally (w the sum of the examples whose coin came "
        "up heads, `weight_rule: example`) runs as the variant `table4_weight_per_example`, listed with its count.",
        "- **Khardon & Wachman, Table 7's training orders.** The paper runs parameter optimization once on the "
        "fixed split, with one random order of the training data (\"the training set is randomly permuted before "
        "running the experiments\", §3.2), so its cells carry no spread. plab runs the whole protocol, inner 10-fold search included, over 10 training "
        "orders (`training.seed` 2007-2016, the first being the one order of earlier versions) for USPS and "
        "Adult: a cell is the mean over the orders, and their central 95% is the range the order alone gives. "
        "MNIST's Table 7 (`make reproduce SET=full` only) keeps one order: it is not part of the default "
        "reproduction, whose time the USPS and Adult orders already use.",
        "- **Khardon & Wachman, Table 5's replicates.** The paper runs Table 5's protocol once, so each of its "
        "cells rests on one draw of N examples per fold and one training order (\"the training set is randomly "
        "permuted before running the experiments\", §3.2). plab runs the whole protocol over 10 values of "
        "`training.seed` (2007-2016), each redrawing every fold's N examples and its order (the folds stay "
        "those of `evaluation.fold_seed`): a cell is the mean over the draws, and their central 95% is the "
        "range a single run gives; the two-sample check reads the T-interval over the folds of the accuracies "
        "averaged over the draws against the paper's standard deviation over its 10 folds. The single run "
        "(`training.seed` 2007) is kept as the variant `table5_single_run`, listed with its count; the scaling "
        "variants (`table5_raw_units`, `table5_standardized`) run once, so their counts read against it.",
        "- **Khardon & Wachman, artificial data (Tables 4 and 6).** The paper reports one generated data set per "
        "cell; a single draw's best accuracy varies by several points between draws. Each cell is the mean ± sd "
        "over 10 independent draws, and the central 95% of the draws is the range that sampling alone gives.",
        "- **Gentile, Table 6's B.** §4 states B = 1/alpha, but the correction counts §4.4 quotes fit Theorem 3's "
        "B = sqrt(8)/alpha. Corrections on the first training set, paper / ours with 1/alpha / ours with "
        "sqrt(8)/alpha: ALMA_2(0.5) 2720 / 684 / 2701; ALMA_10(0.5) 1050 / 153 / 1053; ALMA_10(0.5) at "
        "epsilon = 0.15 3594 / 3317 / 3771. At alpha = 1, where B plays no part, ours match. The alpha < 1 rows "
        "are scored with the B the paper's own counts identify; the stated B runs as a variant (see "
        "`configs/gentile2001/table6.yaml`).",
    ]


def damage_lines(rep: Report) -> list[str]:
    """The runs and logs left out of the counts because a file of theirs is damaged (empty when none)."""
    if not rep.damaged:
        return []
    n = rep.damaged_runs
    return [f"- **DAMAGED: {n} run folder{'s' if n > 1 else ''} or log{'s' if n > 1 else ''} not counted** "
            "in any total below:"] + [f"  - `{d}`: {why}" for d, why in rep.damaged]


def damage_note(rep: Report) -> str:
    """``; damaged: N run(s) not counted`` for the totals' lines (empty when none)."""
    n = rep.damaged_runs
    return f"; damaged: {n} run{'s' if n > 1 else ''} not counted" if n else ""


def summary_lines(rep: Report) -> list[str]:
    """Per table, per paper (the paper's settings; variants apart) and overall: the strict count
    of cells within tolerance, the count consistent with sampling and the causes of the rest;
    first, the damaged runs left out of every count."""
    lines = damage_lines(rep)
    for t in rep.tables:
        ok, n, both = t.counts
        extra = f" ({both - n} shown, not scored)" if both > n else ""
        causes = _causes_text(t.cause_counts())
        lines.append(f"- `{t.name}` ({t.run_dir}{', variant' if t.variant else ''}): **{ok}/{n}** in-scope cells "
                     f"within tolerance, {t.n_consistent}/{n} consistent with sampling"
                     f"{two_sample_text(*t.two_sample, sep=', ')}; {both} cells compared"
                     f"{extra}" + (f"; outside: {causes}" if causes else "") + _scored_same_cells(rep, t))
    for paper in plugins.names():
        short = plugins.get(paper).short
        tabs = [t for t in rep.tables if t.paper == paper and not t.variant]
        for number in sorted({t.number for t in tabs if t.number is not None}):
            group = [t for t in tabs if t.number == number]
            ok, n, _, cons, causes = _tally(group)
            if n:
                lines.append(f"- {short} Table {number}: {ok}/{n} within tolerance, {cons}/{n} "
                             f"consistent with sampling{two_sample_text(*_two_sample_tally(group), sep=', ')}"
                             + (f"; outside: {_causes_text(causes)}" if causes else ""))
        if tabs:
            ok, n, _, cons, causes = _tally(tabs)
            lines.append(f"- **{short}, the paper's settings: {ok}/{n} within tolerance**, {cons}/{n} "
                         f"consistent with sampling{two_sample_text(*_two_sample_tally(tabs), sep=', ')}"
                         + (f"; outside: {_causes_text(causes)}" if causes else "")
                         + family_text(tabs) + unscored_text(tabs))
    main = [t for t in rep.tables if not t.variant]
    ok, n, both, cons, causes = _tally(main)
    lines.append(f"- **Overall, the papers' settings: {ok}/{n} in-scope cells within tolerance**, {cons}/{n} "
                 f"consistent with sampling ({both} cells compared)"
                 + (f"; outside: {_causes_text(causes)}" if causes else "") + unscored_text(main) + damage_note(rep))
    var = [t for t in rep.tables if t.variant]
    if var:
        ok, n, both, cons, _ = _tally(var)
        lines.append(f"- Variants (settings the papers do not state, below `variants/`): {ok}/{n} within tolerance, "
                     f"{cons}/{n} consistent with sampling; not in the totals above")
    return lines


#: What identifies one cell of a paper's table across runs (the comparison columns).
CELL_KEY = ["table", "block", "row", "column", "metric"]


def _scored_same_cells(rep: Report, t: TableResult) -> str:
    """For a variant, the count of the scored runs (the paper's settings) over the same in-scope cells:
    ``; the same N cells with the scored settings: K/N``, so a variant that runs only some columns
    (e.g. the other reading of a setting) is read against like for like. Empty for a scored table or
    a variant with no cell in common."""
    if not t.variant or t.number is None:
        return ""
    mine = t.scoped[CELL_KEY].astype(str).drop_duplicates()
    main = [u.scoped for u in rep.tables if u.paper == t.paper and u.number == t.number and not u.variant]
    if mine.empty or not main:
        return ""
    scored_cells = pd.concat(main, ignore_index=True)
    keyed = scored_cells.assign(**{k: scored_cells[k].astype(str) for k in CELL_KEY})
    same = keyed.merge(mine, on=CELL_KEY, how="inner")
    if same.empty:
        return ""
    return (f"; the same {len(same)} cells with the scored settings: "
            f"{int((same['within'] == True).sum())}/{len(same)}")  # noqa: E712


def cause_lines(rep: Report) -> list[str]:
    """The vocabulary, the source of the causes and any rule that matched nothing."""
    src = f"`{rep.causes_file}`" if rep.causes_file else "no causes file (every cell not covered by sampling is unexplained)"
    lines = [f"- `{k}`: {v}" for k, v in VOCABULARY.items()]
    lines.append(f"- Rules read from {src}; the first rule matching a cell gives its cause and note.")
    lines += [f"- Unused rule (matches no cell outside tolerance): {r.table} / {r.run} / {r.block} / {r.row} / "
              f"{r.column} -> {r.cause}" for r in rep.unused_rules]
    return lines


def missing_lines(rep: Report) -> list[str]:
    """Paper tables and figures with no results yet."""
    from perceptron_lab.run.reference import reference_tables

    have = {m for m in (_table_match(t.name) for t in rep.tables) if m}
    todo: dict[str, list[int]] = {}
    for name in reference_tables():
        m = _table_match(name)
        if m and name not in plugins.get(m[0]).not_result_tables and m not in have:
            todo.setdefault(m[0], []).append(m[1])
    lines = [f"- {plugins.get(p).short} Table{'s' if len(ns) > 1 else ''} {', '.join(map(str, sorted(ns)))}: "
             "no results yet" for p, ns in todo.items()]
    stems = {f.stem for f in rep.figures}
    lines += [f"- {what}: not drawn yet" for p in plugins.papers() for stem, what in p.figures.items()
              if stem not in stems]
    return lines


def outside_tolerance(rep: Report) -> pd.DataFrame:
    """Every in-scope cell outside its tolerance, with what a reader needs to find it."""
    rows = []
    for t in rep.tables:
        for _, r in t.causes.iterrows():
            rows.append({"table": t.name, "source": str(t.run_dir), "block": r["block"], "row": r["row"],
                         "column": r["column"], "metric": r["metric"], "paper": _num(r["paper"]),
                         "ours": _num(r["ours_mean"]), "± std": _num(r["ours_std"]), "diff": _num(r["diff"]),
                         "tolerance": _num(r["tolerance"]), "cause": r["cause"], "evidence": r["cause_note"]})
    return pd.DataFrame(rows, columns=["table", "source", "block", "row", "column", "metric", "paper", "ours",
                                       "± std", "diff", "tolerance", "cause", "evidence"])


def reproduction_lines(rep: Report) -> list[str]:
    """One line per ``reproduce.json`` log: how long computing every config took, on what."""
    out = []
    for path, log in rep.reproductions:
        configs = log.get("configs") or {}
        full = recorded_seconds(configs)
        computed = sum(full.values())
        # figures drawn beside the configs (in their pool) took no time of their own
        figs = sum(float(t.get("wall_seconds") or 0) for t in (log.get("figures") or {}).values()
                   if not t.get("side_by_side"))
        jobs = sorted({configs[c].get("jobs") for c in full if configs[c].get("jobs") is not None})
        m = log.get("machine") or {}
        where = f"on {m.get('cpus', '?')} CPUs ({m.get('processor', '?')}), --jobs {', '.join(map(str, jobs)) or '?'}"
        if log.get("side_by_side"):   # the configs shared one pool of workers: their times overlap
            configs_s = float(log.get("wall_seconds") or 0)   # the configs only, figures apart
            beside = [n for n, t in (log.get("figures") or {}).items() if t.get("side_by_side")]
            line = (f"- `{path}`: {len(full)} of {len(configs)} configs computed from scratch, side by side in "
                    f"one pool of workers" + (f" with {', '.join(beside)}" if beside else "")
                    + f", in {configs_s / 60:.1f} min, plus {figs / 60:.1f} min for the figures, {where}")
        else:
            line = (f"- `{path}`: {len(full)} of {len(configs)} configs computed from scratch in "
                    f"{computed / 60:.1f} min, plus {figs / 60:.1f} min for the figures, {where}")
        partial = len(configs) - len(full)
        if partial:
            line += f"; {partial} config(s) were resumed, so their times are not the whole cost"
        earlier = sum(1 for t in configs.values() if t.get("from_earlier_invocation"))
        state = f"finished {log['finished']}" if log.get("finished") else "interrupted"
        line += (f". Latest invocation ({state}, {log.get('wall_seconds', '?')} s)"
                 + (f"; {earlier} config times come from earlier invocations" if earlier else ""))
        out.append(line)
    return out


def run_lines(rep: Report) -> list[str]:
    out = []
    for d, info in rep.runs:
        if "damaged" in info:
            out.append(f"- `{d}`: **DAMAGED, not counted**: {info['damaged']}")
            continue
        v = info.get("versions") or {}

        def g(k, src=info):
            x = src.get(k)
            return "?" if x is None else x

        out.append(f"- `{d}`: {g('name')}, {g('units')} runs, status {g('status')}, wall of the last "
                   f"invocation {g('wall_seconds')} s "
                   f"(training {g('train_seconds_total')} s, evaluation {g('eval_seconds_total')} s, "
                   f"loading {g('load_seconds')} s, writing {g('write_seconds')} s; peak memory "
                   f"{g('peak_rss_gb_per_process')} GB per process); "
                   f"finished {g('finished')}; perceptron_lab {g('perceptron_lab', v)}, numpy {g('numpy', v)}, "
                   f"numba {g('numba', v)}, {g('cpus', v)} CPUs, {g('platform', v)}; git {g('git_revision')}"
                   + (f"; {note}" if (note := exactness_note(info)) else ""))
    return out


def _table_notes(t: TableResult) -> list[str]:
    p = plugins.get(t.paper)
    return p.table_notes(t) if p.table_notes else []


def build(rep: Report, out: Path) -> list[tuple]:
    """The report as a list of items (``("h1"|"h2"|"h3"|"p", text)``, ``("ul", lines)``,
    ``("table", frame)``, ``("img", path)``) that :func:`to_markdown` renders (the HTML pages come from :mod:`perceptron_lab.report.html`)."""
    items: list[tuple] = [
        ("h1", "perceptron_lab: the papers' tables next to ours"),
        ("p", "Each layout cell: our mean ± standard deviation over permutations or folds, the paper's value in "
              "parentheses (Khardon & Wachman Table 6: ± the 95% T-interval). Every comparison lists, per cell, the "
              "paper's value, ours, the difference, the tolerance and whether ours is within it; `plab compare "
              "RUN_DIR` prints them for one run."),
        ("h2", "How cells are scored"), ("ul", scoring_rules()),
        ("h2", "Protocol choices and assumptions"), ("ul", protocol_notes()),
        ("h2", "Summary"), ("ul", summary_lines(rep)),
        ("h3", "Causes of the cells outside tolerance"), ("ul", cause_lines(rep)),
    ]
    missing = missing_lines(rep)
    if missing:
        items += [("h3", "Not reproduced yet"), ("ul", missing)]
    bad = outside_tolerance(rep)
    if not bad.empty:
        items.append(("p", f"{len(bad)} in-scope cells are outside tolerance; each is listed under "
                           "*In-scope cells outside tolerance* at the end."))
    for paper, title in ((p.name, p.title) for p in plugins.papers()):
        tabs = [t for t in rep.tables if t.paper == paper]
        figs = [f for f in rep.figures if f.name.startswith(paper)]
        if not tabs and not figs:
            continue
        items.append(("h2", title))
        for t in tabs:
            ok, n, both = t.counts
            only_paper = int((t.comparison["paper"].notna() & ~compared(t.comparison)).sum())
            gap = f"; {only_paper} of the paper's cells have no value of ours here" if only_paper else ""
            causes = _causes_text(t.cause_counts())
            items += [("h3", f"{t.name} — {t.run_dir}" + (" (variant)" if t.variant else "")),
                      ("p", f"{ok}/{n} in-scope cells within tolerance, {t.n_consistent}/{n} consistent with "
                            f"sampling{two_sample_text(*t.two_sample, sep=', ')} ({both} compared{gap})" + (f"; outside tolerance: {causes}" if causes else "")
                            + f". Source: `{t.run_dir}`")]
            notes = _table_notes(t)
            if notes:
                items += [("p", notes[0])] + ([("ul", notes[1:])] if len(notes) > 1 else [])
            items.append(("table", t.layout))
        for f in figs:
            items.append(("img", f))
    items += rep.study_items
    if not bad.empty:
        items += [("h2", "In-scope cells outside tolerance"),
                  ("p", "`block`, `row` and `column` name the cell in the table's layout above, `source` the run "
                        "folder; ours is the mean (± std) over runs, diff = ours - paper; `cause` and `evidence` "
                        "come from the sampling ranges and the causes file."), ("table", bad)]
    items.append(("h2", "Runs, machine and versions"))
    if rep.reproductions:
        items += [("p", "The whole reproduction (`make reproduce`, log `results/reproduce.json`):"),
                  ("ul", reproduction_lines(rep))]
    items += [("p", "Each run folder (training and evaluation are summed over its runs, which may have run in "
                    "parallel; a resumed invocation's wall time covers only what it computed):"),
              ("ul", run_lines(rep))]
    return items


def _md_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(no layout)_\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        lines.append("| " + " | ".join(str(v).replace("|", "/") for v in row.values) + " |")
    return "\n".join(lines) + "\n"


def to_markdown(items, out: Path) -> str:
    md = []
    for kind, x in items:
        if kind in ("h1", "h2", "h3"):
            md += ["#" * int(kind[1]) + " " + x, ""]
        elif kind == "p":
            md += [x, ""]
        elif kind == "ul":
            md += list(x) + [""]
        elif kind == "table":
            md += [_md_table(x), ""]
        elif kind == "img":
            rel = Path(os.path.relpath(x.resolve(), out.resolve()))
            md += [f"![{x.name}]({rel.as_posix()})", ""]
    return "\n".join(md)


def write_report(paths, out_dir, allow_damaged: bool = False) -> tuple[Path, Path]:
    """Write the report of ``paths`` into ``out_dir``. A damaged run folder or log stops it before
    anything is written (:class:`~perceptron_lab.errors.DamagedFileError`, exit status 1), unless
    ``allow_damaged``: then the report is written with the damaged ones marked and left out of the
    counts."""
    from perceptron_lab.report.html import _env, study_page
    from perceptron_lab.report.runs import readable_runs, run_items

    quiet: list = []
    rep = collect(paths, warn=warn if allow_damaged else quiet.append)
    mine, broken = readable_runs(rep)   # the runs that reproduce no paper table: a report of their own
    for d, why in broken:
        (warn if allow_damaged else quiet.append)(f"{why}; run {d} is marked damaged and not shown")
        rep.damaged.append((d, why))
        rep.runs = [(r, {"damaged": why} if r == d else info) for r, info in rep.runs]
    if rep.damaged and not allow_damaged:
        where, why = rep.damaged[0]
        more = f" (and {len(rep.damaged) - 1} more)" if len(rep.damaged) > 1 else ""
        raise DamagedFileError(f"{why}{more}: the report would leave it out of its counts; fix it or rerun the run "
                               f"that wrote it, or pass --allow-damaged to write a report that marks it DAMAGED")
    out = Path(out_dir)
    from perceptron_lab.run.store import check_replaceable

    # before a figure of your runs is drawn; a report.md is plab's when its title is (``# perceptron_lab: ...``)
    for name, head in (("report.md", b"# perceptron_lab: report\n"), ("index.html", None), ("runs.html", None)):
        check_replaceable(out / name, head)
    out.mkdir(parents=True, exist_ok=True)
    own = run_items(mine, out)
    md_path = out / "report.md"
    if own and not (rep.tables or rep.figures or rep.study_items or rep.reproductions):
        # only runs of your own: their report, without the papers' sections
        items = ([("h1", "perceptron_lab: your runs")] + ([("ul", damage_lines(rep))] if rep.damaged else [])
                 + own[1:] + [("h2", "Runs, machine and versions"), ("ul", run_lines(rep))])
        atomic_write_text(md_path, to_markdown(items, out))
        index = out / "index.html"
        atomic_write_text(index, study_page(_env(), "your runs", items, out, standalone=True))
        return md_path, index
    items = build(rep, out)
    if own:   # the papers' report, then your runs (a page of their own in HTML)
        at = next(i for i, (kind, x) in enumerate(items) if kind == "h2" and x == "Runs, machine and versions")
        items = items[:at] + own + items[at:]
    atomic_write_text(md_path, to_markdown(items, out))
    studies = [(f"{budget_study.STUDY_DIR}.html", "kernel perceptrons on a memory budget", rep.study_items)]
    studies = (studies if rep.study_items else []) + ([("runs.html", "your own runs", own)] if own else [])
    html_paths = write_pages(rep, out, {"scoring": scoring_rules(), "protocol": protocol_notes(),
                                        "damaged": damage_lines(rep), "damage_note": damage_note(rep),
                                        "cause_lines": cause_lines(rep), "missing": missing_lines(rep),
                                        "reproductions": reproduction_lines(rep), "runs": run_lines(rep)},
                             studies)
    return md_path, next(p for p in html_paths if p.name == "index.html")


def compare_text(run_dir, only_outside: bool = False, cells: bool = True) -> str:
    """The comparison of one run folder (or every run folder below it), for the terminal.
    ``only_outside``: list only the in-scope cells outside tolerance, with their causes;
    ``cells=False``: only each table's counts."""
    rep = collect([run_dir], strict=True)
    if not rep.tables:
        unfinished = [f"{d} ({info.get('status', '?')})" for d, info in rep.runs if info.get("status") != "complete"]
        why = f"; unfinished runs: {', '.join(unfinished)}" if unfinished else ""
        return f"{run_dir}: no paper tables found (they are written when a run a paper reports finishes){why}"
    out = []
    for t in rep.tables:
        ok, n, both = t.counts
        causes = _causes_text(t.cause_counts())
        out.append(f"{t.name} ({t.run_dir}): {ok}/{n} in-scope cells within tolerance, {t.n_consistent}/{n} "
                   f"consistent with sampling ({both} compared)" + (f"; outside: {causes}" if causes else ""))
        out += [f"  {line}" for line in _table_notes(t)]
        if not cells:
            continue
        c = t.comparison
        cols = ["block", "row", "column", "metric", "paper", "ours_mean", "ours_std", "n_runs", "diff",
                "tolerance", "within", "in_scope"]
        if only_outside:
            c, cols = t.causes, cols[:-2] + ["cause", "cause_note"]
            if c.empty:
                out += ["  no in-scope cell is outside tolerance", ""]
                continue
        show = c[cols]
        with pd.option_context("display.max_rows", None, "display.width", 200):
            out.append(show.to_string(index=False, na_rep="", float_format=lambda v: _num(v)))
        out.append("")
    return "\n".join(out)
