"""Causes of cells outside tolerance, the sampling ranges and the report's counts, on hand-made
comparison files (the values are chosen so that each outcome is known without running plab)."""

import json
import math

import pandas as pd
import pytest

from perceptron_lab.report.causes import load_rules
from perceptron_lab.run.comparison import consistent, normalize, sampling_covers
from perceptron_lab.errors import PlabError
from perceptron_lab.report.tables import collect, summary_lines


def _cmp(rows):
    base = {"table": 3, "metric": "accuracy_pct", "n_runs": 10, "tolerance": 2.0, "in_scope": True}
    df = pd.DataFrame([base | r for r in rows])
    df["diff"] = df["ours_mean"] - df["paper"]
    df["within"] = (df["diff"].abs() <= df["tolerance"])
    return df


def _run(root, sub, name, rows):
    d = root / sub
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"name": name}))
    _cmp(rows).to_csv(d / f"{name}_comparison.csv", index=False)
    return d


def test_sampling_range_from_draws_covers_or_not():
    c = normalize(_cmp([
        # outside tolerance, paper inside the draws' range: consistent with sampling
        {"block": "a", "row": "Last", "column": "tau", "paper": 66.0, "ours_mean": 69.0, "ours_std": 3.0,
         "sampling_lo": 63.0, "sampling_hi": 72.0, "sampling_basis": "draws"},
        # outside tolerance and outside the range
        {"block": "a", "row": "Voted", "column": "tau", "paper": 60.0, "ours_mean": 69.0, "ours_std": 3.0,
         "sampling_lo": 63.0, "sampling_hi": 72.0, "sampling_basis": "draws"},
        # within tolerance: consistent whatever the range
        {"block": "b", "row": "Last", "column": "tau", "paper": 69.5, "ours_mean": 69.0, "ours_std": 0.0,
         "sampling_lo": math.nan, "sampling_hi": math.nan, "sampling_basis": ""},
    ]))
    assert sampling_covers(c).tolist() == [True, False, False]
    assert consistent(c).tolist() == [True, False, True]


def test_sampling_range_derived_from_std_over_runs():
    # no range given: mean ± t_{9, 0.975} * sd / sqrt(10) = 80 ± 2.2622 * 3 / 3.1623 = 80 ± 2.146
    c = normalize(_cmp([{"block": "a", "row": "Last", "column": "x", "paper": 77.0, "ours_mean": 80.0,
                         "ours_std": 3.0}]))
    assert c.loc[0, "sampling_basis"] == "runs"
    assert c.loc[0, "sampling_lo"] == pytest.approx(80.0 - 2.262157 * 3.0 / math.sqrt(10), abs=1e-5)
    assert not sampling_covers(c).iloc[0]  # 77 < 77.854


def test_causes_file_rules_sampling_first_and_unused_rules(tmp_path):
    root = tmp_path / "results"
    _run(root, "kw2007/table3_usps", "kw2007_table3", [
        {"block": "usps", "row": "Last", "column": "tau", "paper": 90.0, "ours_mean": 95.0, "ours_std": 0.1,
         "sampling_lo": 94.5, "sampling_hi": 95.5, "sampling_basis": "folds"},
        {"block": "usps", "row": "Longest", "column": "tau", "paper": 80.0, "ours_mean": 88.0, "ours_std": 0.1,
         "sampling_lo": 79.0, "sampling_hi": 90.0, "sampling_basis": "folds"},
        {"block": "usps", "row": "Voted", "column": "tau", "paper": 94.0, "ours_mean": 94.5, "ours_std": 0.1},
    ])
    _run(root, "kw2007/variants/table3_usps_split", "kw2007_table3", [
        {"block": "usps", "row": "Last", "column": "tau", "paper": 90.0, "ours_mean": 99.0, "ours_std": 0.1},
    ])
    (root / "causes.yaml").write_text(
        "causes:\n"
        "  - {table: kw2007_table3, block: usps, row: Last, cause: data-copy, note: our USPS differs}\n"
        "  - {table: kw2007_table3, row: Longest, cause: protocol-unspecified, note: never reached}\n"
        "  - {table: gentile2001_*, cause: unexplained, note: nothing matches this}\n")
    rep = collect([root])
    main, variant = sorted(rep.tables, key=lambda t: t.variant)
    assert not main.variant and variant.variant
    causes = main.causes.set_index("row")
    assert causes.loc["Last", "cause"] == "data-copy" and causes.loc["Last", "cause_note"] == "our USPS differs"
    # the paper's 80.0 lies in [79, 90]: computed as sampling before any rule is tried
    assert causes.loc["Longest", "cause"] == "sampling"
    assert main.counts == (1, 3, 3) and main.n_consistent == 2
    assert variant.cause_counts() == {"data-copy": 1}
    # the Longest rule is shadowed by the computed sampling cause, so it is reported unused too
    assert [(r.table, r.row) for r in rep.unused_rules] == [("kw2007_table3", "Longest"), ("gentile2001_*", "*")]
    lines = summary_lines(rep)
    assert any("Khardon & Wachman, the paper's settings: 1/3 within tolerance**, 2/3 consistent with sampling; "
               "outside: sampling 1, data-copy 1" in x for x in lines)
    assert any(x.startswith("- Variants") and "0/1 within tolerance" in x for x in lines)


@pytest.mark.parametrize("text, message", [
    ("causes:\n  - {cause: sampling, note: x}\n", "'sampling' is computed from the results"),
    ("causes:\n  - {cause: bad-luck, note: x}\n", "cause must be one of"),
    ("causes:\n  - {cause: data-copy}\n", "needs a one-line 'note'"),
    ("causes:\n  - {cause: data-copy, note: x, colum: tau}\n", "unknown key 'colum'"),
    ("- just a list\n", "expected a mapping with a 'causes' list"),
    ("causes: [\n", "not a readable YAML file"),
])
def test_bad_causes_file_is_one_line_error(tmp_path, text, message):
    p = tmp_path / "causes.yaml"
    p.write_text(text)
    with pytest.raises(PlabError) as e:
        load_rules(p)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_cells_with_a_tolerance_but_no_value_of_ours_are_named_beside_the_count(tmp_path):
    """A cell the paper prints, with a tolerance, where we have no value (no SVM grid value converged)
    leaves the scored denominator; the summary says so beside the count, with the cell and the reason,
    and counts the perceptron family apart from the baselines (Table 3's majority class, Table 6's SVM)."""
    root = tmp_path / "results"
    _run(root, "kw2007/table6_uci", "kw2007_table6", [
        {"block": "crx", "row": "Last", "column": "tau", "paper": 80.0, "ours_mean": 81.0, "ours_std": 1.0},
        {"block": "crx", "row": "Voted", "column": "tau", "paper": 80.0, "ours_mean": 90.0, "ours_std": 0.1},
        {"block": "crx", "row": "SVM", "column": "SVM L1", "paper": 70.0, "ours_mean": 70.5, "ours_std": 1.0},
        {"block": "crx", "row": "SVM", "column": "SVM L2", "paper": 65.9, "ours_mean": math.nan, "ours_std": math.nan,
         "n_runs": 0, "detail": "no grid value converged"},
    ])
    rep = collect([root])
    (t,) = rep.tables
    assert t.counts[:2] == (2, 3)
    assert len(t.unscored) == 1 and t.family_counts == (1, 2)
    line = next(x for x in summary_lines(rep) if "Khardon & Wachman, the paper's settings" in x)
    assert "2/3 within tolerance" in line
    assert "the perceptron family alone: 1/2, its baselines (majority class, SVM): 1/1" in line
    assert "1 more cell with a tolerance not scored, no value of ours: Table 6 crx / SVM / SVM L2 " \
           "(no grid value converged)" in line


def test_an_inferred_data_copy_is_its_own_cause(tmp_path):
    """``data-copy-inferred`` says in the label that the cause is inferred from the pattern of misses; the
    report keeps it apart from a shown ``data-copy``."""
    from perceptron_lab.report.causes import ASSERTABLE, VOCABULARY
    from perceptron_lab.report.html import STATUS

    assert "data-copy-inferred" in ASSERTABLE and "inferred" in VOCABULARY["data-copy-inferred"]
    assert "inferred" in STATUS["data-copy-inferred"][0]
    path = tmp_path / "causes.yaml"
    path.write_text("causes:\n  - {table: gentile2001_table2, cause: data-copy-inferred, note: per-digit misses}\n")
    (rule,) = load_rules(path)
    assert rule.cause == "data-copy-inferred"


def test_a_cell_another_run_of_the_same_table_scores_is_not_called_unscored(tmp_path):
    """Gentile's tables are filled by several runs, each writing the whole layout: a cell one run leaves
    empty and another scores is scored; only a cell no run has a value for is named."""
    from perceptron_lab.report.html import unscored_cells, unscored_text

    root = tmp_path / "results"
    nan = {"ours_mean": math.nan, "ours_std": math.nan, "n_runs": 0}
    _run(root, "gentile2001/a", "gentile2001_table5", [
        {"block": "letter", "row": "ALMA last", "column": "1", "paper": 5.0, "ours_mean": 5.1, "ours_std": 0.1},
        {"block": "letter", "row": "Perceptron last", "column": "1", "paper": 6.0, **nan}])
    _run(root, "gentile2001/b", "gentile2001_table5", [
        {"block": "letter", "row": "ALMA last", "column": "1", "paper": 5.0, **nan},
        {"block": "letter", "row": "Perceptron last", "column": "1", "paper": 6.0, "ours_mean": 6.1, "ours_std": 0.1},
        {"block": "letter", "row": "ROMMA last", "column": "1", "paper": 7.0, **nan}])
    rep = collect([root])
    assert sum(len(t.unscored) for t in rep.tables) == 3
    assert unscored_cells(rep.tables) == [(5, "letter", "ROMMA last", "1", "a baseline plab does not run")]
    assert unscored_text(rep.tables) == ("; 1 more cell with a tolerance not scored, no value of ours: "
                                         "Table 5 letter / ROMMA last / 1 (a baseline plab does not run)")
