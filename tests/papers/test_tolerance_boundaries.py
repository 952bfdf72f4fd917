"""Cells exactly on each paper's tolerance boundary, and just outside it.

Each paper scores a cell as *within* when ``|ours - paper| <= tolerance`` (a closed interval), with
a slack of ``_EPS`` (1e-9) added so that a difference equal to the tolerance in decimals is not
lost to float rounding (|1.9 - 2.2| is 0.30000000000000027 in floats). The tolerances are the
documented ones (docs/papers/*.md, "How cells are scored"), written out here, not read from the code:

* Freund & Schapire (1999): a test error within max(0.3 points, 10% of the paper's value), a count
  (support vectors, mistakes) within 10%;
* Gentile (2001): a test error within max(0.2 points, 10%), a count (corrections, support vectors)
  within 10%;
* Khardon & Wachman (2007): an accuracy within the paper's 95% interval where it prints one
  (Table 6), otherwise within 2 points.

For each rule, a constructed row sits on the boundary in three ways: the decimal boundary (ours =
paper ± tolerance, written in decimals: within); the rule's own float boundary (a value whose
computed ``|ours - paper|`` is exactly ``tolerance + _EPS``: within, so a ``<`` for the ``<=`` is
caught); the next float beyond it, and a value 1e-6 beyond the tolerance, far below one test
prediction of any table (outside, so a wider tolerance or slack is caught).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.run.plan import RESULT_COLUMNS
from perceptron_lab.run.reference import reference_table

#: Beyond the tolerance by this much is outside (a thousandth of one test prediction in 60000).
JUST_OUTSIDE = 1e-6


def _slack(module) -> float:
    """The rounding slack of a paper's rule: positive, and far below anything that is a tolerance."""
    eps = module._EPS
    assert 0 < eps <= 1e-8, eps
    return eps


def _decimal(paper: float, delta: float) -> float:
    """paper + delta computed in decimals, then rounded once to a float (as a printed value is)."""
    return float(Decimal(repr(paper)) + Decimal(repr(delta)))


def float_boundary(paper: float, tol: float, eps: float, side: int):
    """A float ``ours`` on ``side`` (+1 above the paper, -1 below) whose ``abs(ours - paper)``, as
    floats compute it, is exactly ``tol + eps`` (as floats compute it; the outermost such float),
    and the first float beyond it, whose difference is larger; None when no float near
    paper ± (tol + eps) lands exactly there."""
    bound = tol + eps
    x = paper + side * bound
    for _ in range(8):
        x = np.nextafter(x, -side * math.inf)          # step back toward the paper first
    on = None
    for _ in range(32):
        d = abs(x - paper)
        if d == bound:
            on = x
        elif d > bound and on is not None:
            return float(on), float(x)
        x = np.nextafter(x, side * math.inf)
    return None


def boundary_cases(paper: float, tol: float, eps: float):
    """(ours, expected within) around ``paper`` for a rule with tolerance ``tol`` and slack
    ``eps``: the decimal boundary and 1e-6 beyond it on both sides, and the float boundary and
    the next float beyond it where one exists."""
    cases = []
    for side in (1, -1):
        cases.append((_decimal(paper, side * tol), True))
        cases.append((paper + side * (tol + JUST_OUTSIDE), False))
        fb = float_boundary(paper, tol, eps, side)
        if fb is not None:
            cases += [(fb[0], True), (fb[1], False)]
    return cases


def has_float_boundary(paper: float, tol: float, eps: float) -> bool:
    return any(float_boundary(paper, tol, eps, s) is not None for s in (1, -1))


def paper_with_a_float_boundary(printed: float, step: float, tol_of, eps: float) -> float:
    """``printed`` when some float sits exactly on its boundary, else the nearest value printed
    with the same precision (``printed`` ± k ``step``) that has one.

    A float boundary needs ``ours - paper`` to hit ``tol + eps`` exactly: with paper and ours in
    one binade their difference is a multiple of the paper's ulp, which ``tol + eps`` (a few
    binades lower) is only by chance, so a printed value such as 2.2 (tolerance 0.3) has none; the
    rule is then tested on a neighbour of the printed value that has one."""
    for k in range(400):
        for p in ((printed,) if k == 0 else (printed + k * step, printed - k * step)):
            p = round(p, 10)
            if p > 0 and has_float_boundary(p, tol_of(p), eps):
                return p
    raise AssertionError(f"no value printed like {printed} has a float boundary")


# ----------------------------------------------------------------------------- Freund & Schapire


fs_tables = pytest.importorskip("perceptron_lab.papers.fs1999.tables",
                                reason="the fs1999 paper plug-in is not installed")

FS_ROWS = {"Vote": ("vote", None, "test_error_pct"), "Rand unnorm": ("rand", "unnorm", "test_error_pct"),
           "SupVec": ("perceptron", None, "supvec"), "Mistake": ("perceptron", None, "mistakes")}


def _fs_ref_mask(ref, T, row):
    method, normalized, metric = FS_ROWS[row]
    m = (ref["d"] == 4) & (ref["T"] == T) & (ref["method"] == method) & (ref["metric"] == metric)
    return m & (ref["normalized"].isna() if normalized is None else ref["normalized"] == normalized)


def _fs_results(T, spec, value):
    """One run's row for one cell of Freund & Schapire's Table 1 (d = 4, class 'all')."""
    row = ["mnist", "poly", 4, "perceptron", "eta=1;theta_init=0.0;C=0.0;tau=0;lambda=0;alpha_bound=inf", 0,
           -1, 0, f"{T:g}", spec.rule, spec.normalized, "all", spec.metric, value]
    return pd.DataFrame([row], columns=RESULT_COLUMNS)

def _print_in_reference(monkeypatch, tables, table, mask, value):
    """Make the paper print ``value`` in the cells ``mask(t)`` of its reference ``table`` (read
    through ``tables.reference_table``), for the rest of the test."""
    real = tables.reference_table

    def reference_table(name):
        t = real(name).copy()
        if name == table:
            t.loc[mask(t), "value"] = value
        return t

    monkeypatch.setattr(tables, "reference_table", reference_table)



@pytest.mark.parametrize("row, T, tol_of, step", [
    ("Vote", 1.0, lambda p: max(0.3, 0.1 * abs(p)), 0.1),          # 0.3 points (paper 2.2)
    ("Rand unnorm", 1.0, lambda p: max(0.3, 0.1 * abs(p)), 0.1),   # 10% of the paper's 4.6
    ("SupVec", 10.0, lambda p: 0.1 * abs(p), 1.0),
    ("Mistake", 2.0, lambda p: 0.1 * abs(p), 1.0),
], ids=["error-abs", "error-rel", "supvec", "mistakes"])
def test_fs1999_cells_on_the_tolerance_boundary(row, T, tol_of, step, monkeypatch):
    eps = _slack(fs_tables)
    ref = fs_tables.reference_table("fs1999_table1")
    printed = float(ref.loc[_fs_ref_mask(ref, T, row), "value"].iloc[0])
    paper = paper_with_a_float_boundary(printed, step, tol_of, eps)

    _print_in_reference(monkeypatch, fs_tables, "fs1999_table1", lambda t: _fs_ref_mask(t, T, row), paper)
    spec = {r.name: r for r in fs_tables.TABLE1_ROWS}[row]
    tol = tol_of(paper)
    cases = boundary_cases(paper, tol, eps)
    assert len(cases) > 4
    for ours, within in cases:
        cmp = fs_tables.fs1999_comparison(_fs_results(T, spec, ours), 1, degree=4)
        cell = cmp[(cmp["row"] == row) & (cmp["T"] == T)].iloc[0]
        assert cell["paper"] == paper and cell["ours_mean"] == ours and cell["n_runs"] == 1
        assert cell["tolerance"] == tol
        assert bool(cell["within"]) is within, (row, T, paper, tol, ours, within)


def test_fs1999_the_printed_cells_are_scored_on_their_decimal_boundary():
    """Every printed d = 4 test error of Table 1: ours = paper ± tolerance (in decimals) is within,
    1e-6 beyond is not, with the absolute floor and the relative part each deciding some cells."""
    eps = _slack(fs_tables)
    ref = fs_tables.reference_table("fs1999_table1")
    ref = ref[(ref["d"] == 4) & (ref["metric"] == "test_error_pct") & (ref["T"] == 1.0)]
    by_name = {(r.ref_method, r.ref_normalized): r for r in fs_tables.TABLE1_ROWS}
    rows, floors = [], set()
    for r in ref.itertuples(index=False):
        spec = by_name[(r.method, None if pd.isna(r.normalized) else r.normalized)]
        paper = float(r.value)
        tol = max(0.3, 0.1 * paper)
        floors.add(tol == 0.3)
        for k, (ours, within) in enumerate(boundary_cases(paper, tol, eps)[:4]):
            rows.append((spec, float(r.T), paper, ours, within, k))
    assert floors == {True, False}
    for spec, T, paper, ours, within, k in rows:
        frame = _fs_results(T, spec, ours)
        frame["permutation"] = k   # one run per case
        cmp = fs_tables.fs1999_comparison(frame, 1, degree=4)
        cell = cmp[(cmp["row"] == spec.name) & (cmp["T"] == T)].iloc[0]
        assert bool(cell["within"]) is within, (spec.name, T, paper, ours, within)


# ----------------------------------------------------------------------------- Gentile


g_tables = pytest.importorskip("perceptron_lab.papers.gentile2001.tables",
                               reason="the gentile2001 paper plug-in is not installed")


def _gentile_results(rule, error, corrections):
    """One run of the Perceptron on USPS (Gentile's Table 1 rows), one epoch."""
    base = ["usps", "gaussian", 1, "perceptron", "eta=1;theta_init=0.0;C=0.0;tau=0;lambda=0;alpha_bound=inf", 0, -1, 0,
            "1"]
    rows = [base + [rule, "false", "all", "test_error_pct", error], base + ["none", "", "all", "mistakes", corrections]]
    return pd.DataFrame(rows, columns=RESULT_COLUMNS)


def _g_mask(ref, rule, metric):
    return ((ref["algorithm"] == "Perceptron") & (ref["epochs"] == 1) & (ref["rule"] == rule)
            & (ref["metric"] == metric))


@pytest.mark.parametrize("rule, metric, column, tol_of, step", [
    ("last", "test_error_pct", "1 Epoch TestErr", lambda p: max(0.2, 0.1 * abs(p)), 0.01),   # 10% of 6.03
    ("avg", "test_error_pct", "1 Epoch TestErr", lambda p: max(0.2, 0.1 * abs(p)), 0.01),
    ("last", "corrections", "1 Epoch Correct", lambda p: 0.1 * abs(p), 1.0),
], ids=["last-error", "avg-error", "corrections"])
def test_gentile2001_cells_on_the_tolerance_boundary(rule, metric, column, tol_of, step, monkeypatch):
    eps = _slack(g_tables)
    ref = g_tables.reference_table("gentile2001_table1")
    printed = {m: float(ref.loc[_g_mask(ref, rule, m), "value"].iloc[0]) for m in ("test_error_pct", "corrections")}
    paper = paper_with_a_float_boundary(printed[metric], step, tol_of, eps)

    _print_in_reference(monkeypatch, g_tables, "gentile2001_table1", lambda t: _g_mask(t, rule, metric), paper)
    tol = tol_of(paper)
    cases = boundary_cases(paper, tol, eps)
    assert len(cases) > 4
    for ours, within in cases:
        err, corr = (ours, printed["corrections"]) if metric == "test_error_pct" else (printed["test_error_pct"], ours)
        cmp = g_tables.gentile_comparison(_gentile_results(rule, err, corr), 1)
        cell = cmp[(cmp["row"] == f"Perceptron {rule}") & (cmp["column"] == column)].iloc[0]
        assert cell["paper"] == paper and cell["ours_mean"] == ours and cell["n_runs"] == 1
        assert cell["tolerance"] == tol
        assert bool(cell["within"]) is within, (rule, metric, paper, tol, ours, within)


def test_gentile2001_the_printed_cells_are_scored_on_their_decimal_boundary():
    eps = _slack(g_tables)
    ref = g_tables.reference_table("gentile2001_table1")
    floors = set()
    for rule in ("last", "avg"):
        paper = float(ref.loc[_g_mask(ref, rule, "test_error_pct"), "value"].iloc[0])
        corr = float(ref.loc[_g_mask(ref, rule, "corrections"), "value"].iloc[0])
        tol = max(0.2, 0.1 * paper)
        floors.add(tol == 0.2)
        for ours, within in boundary_cases(paper, tol, eps)[:4]:
            cmp = g_tables.gentile_comparison(_gentile_results(rule, ours, corr), 1)
            cell = cmp[(cmp["row"] == f"Perceptron {rule}") & (cmp["column"] == "1 Epoch TestErr")].iloc[0]
            assert bool(cell["within"]) is within, (rule, paper, ours, within)
    # the absolute floor decides the ALMA and perceptron errors below 2 %, e.g. on MNIST (Table 3)
    t3 = g_tables.reference_table("gentile2001_table3")
    small = float(t3.loc[t3["metric"] == "test_error_pct", "value"].min())
    assert 0.1 * small < 0.2


# ----------------------------------------------------------------------------- Khardon & Wachman


kw_tables = pytest.importorskip("perceptron_lab.papers.kw2007.tables",
                                reason="the kw2007 paper plug-in is not installed")


def _kw_within(cases, table=3):
    """``within`` of one Khardon-Wachman cell per (paper, paper's 95% half-width or NaN, ours)."""
    rows = [kw_tables._cmp_row(table, "sonar", "sonar", "Last", "tau", paper, ci, ours, n=10)
            for paper, ci, ours in cases]
    return [bool(w) for w in kw_tables._finish(rows)["within"]]


def _check_kw(cases, table=3):
    """``cases``: (paper, ci, ours, expected within)."""
    got = _kw_within([c[:3] for c in cases], table)
    wrong = [(c, g) for c, g in zip(cases, got) if g is not c[3]]
    assert not wrong, wrong[:5]


def _kw_printed(table):
    ref = reference_table(f"kw2007_table{table}")
    ref = ref[ref["metric"] == "accuracy_pct"]
    return ref


def test_kw2007_accuracy_without_an_interval_on_the_2_point_boundary():
    """Tables 3, 4, 5 and 7: within 2 points. Every printed Table 3 accuracy on its decimal
    boundary, and the float boundary on the nearest printed-like value that has one: no accuracy
    above 34 has one (its differences of about 2 are multiples of 2^-47 or coarser, 2 + 1e-9 is
    not), so none of the paper's does."""
    eps = _slack(kw_tables)
    printed = [float(v) for v in _kw_printed(3)["value"].dropna()]
    assert len(printed) > 50
    _check_kw([(paper, math.nan, ours, within) for paper in printed
               for ours, within in boundary_cases(paper, 2.0, eps)])
    assert not any(has_float_boundary(p, 2.0, eps) for p in printed)
    paper = paper_with_a_float_boundary(min(printed), 0.1, lambda p: 2.0, eps)
    cases = boundary_cases(paper, 2.0, eps)
    assert len(cases) > 4
    _check_kw([(paper, math.nan, ours, within) for ours, within in cases])


def test_kw2007_accuracy_on_the_boundary_of_the_papers_interval():
    """Table 6: within the paper's printed 95% interval, on every printed cell's decimal boundary
    and on the float boundary of the cells that have one."""
    eps = _slack(kw_tables)
    ref = _kw_printed(6)
    pairs = [(float(a), float(c)) for a, c in zip(ref["value"], ref["ci"]) if not (pd.isna(a) or pd.isna(c))]
    assert len(pairs) > 50
    cases = [(paper, ci) + c for paper, ci in pairs for c in boundary_cases(paper, ci, eps)]
    _check_kw(cases, table=6)
    # the float boundary: a few printed cells have one (3 of 206), and so does a made-up one
    assert len(cases) > 4 * len(pairs)
    paper = paper_with_a_float_boundary(20.0, 0.1, lambda p: 2.5, eps)
    _check_kw([(paper, 2.5) + c for c in boundary_cases(paper, 2.5, eps)], table=6)


def test_kw2007_a_cell_over_draws_is_scored_by_the_same_boundary():
    """Tables 4 and 6 (artificial) score a cell over draws of the generator by the same rule."""
    eps = _slack(kw_tables)
    paper = paper_with_a_float_boundary(float(_kw_printed(4)["value"].min()), 0.1, lambda p: 2.0, eps)
    for ours, within in boundary_cases(paper, 2.0, eps):
        draws = [(ours, 1.0, 0.5, 10, "tau=1", ("dataset.params.seed", 1.0))]
        cell = kw_tables._cell_over_draws(4, "a", "N=0", "Last", "tau", paper, math.nan, draws)
        assert cell["within"] is within, (paper, ours, within)
