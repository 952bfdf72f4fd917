"""The KOL comparison (perceptron_lab/studies/kol.py) on hand-made runs: reading KOL's output, KOL's
error count behind its printed accuracy, and the status of each cell. No data, no KOL binary."""

import pandas as pd

from perceptron_lab.studies import kol

#: KOL's README, the output of ``KOL -i a9a_train -t a9a_test -opt kernel-perceptron``.
README_OUTPUT = """Algorithm: kernel_perceptron

0	10000	20000	30000

#Training Instances:32561

Learn acuracy: 78.851997%

#SV:6887

Learning time: 10.218000 s

Test acuracy: 70.738899 %

Test time: 9.766000 s
"""


def test_parse_kol_reads_the_readme_output():
    got = kol.parse_kol(README_OUTPUT)
    assert got == {"learn_accuracy_pct": 78.851997, "support_vectors": 6887, "test_accuracy_pct": 70.738899,
                   "learn_seconds": 10.218, "n_train": 32561}


def test_kol_error_count_behind_its_printed_learn_accuracy():
    # 6886 errors of 32561 print as 78.851997 (KOL counts the first example, score 0 on a -1, as correct)
    assert kol.kol_mistakes(78.851997, 32561) == 6886
    assert kol.kol_mistakes(100.0, 10) == 0 and kol.kol_mistakes(90.0, 10) == 1


def _ref(rows):
    return pd.DataFrame([dict(zip(kol.REFERENCE_COLUMNS, r)) for r in rows])


def _runs(rows):
    return pd.DataFrame([{"dataset": d, "algorithm": a, "budget": b, "seed": s, "metric": m, "value": v}
                         for d, a, b, s, m, v in rows])


def test_compare_scores_deterministic_cells_by_equality_and_rbp_by_our_range():
    ref = _ref([("german", "projectron", 100, 1, 66.8, 100, 76.7, 0.01, 1000),
                ("german", "rbp", 100, 1, 65.0, 100, 70.0, 0.01, 1000),
                ("german", "rbp", 100, 2, 66.0, 100, 69.0, 0.01, 1000)])
    runs = _runs([("german", "projectron", 100, 0, "mistakes", 332), ("german", "projectron", 100, 0, "mistakes_plab", 333),
                  ("german", "projectron", 100, 0, "support_vectors", 100),
                  ("german", "projectron", 100, 0, "test_accuracy_pct", 76.4), ("german", "projectron", 100, 0, "seconds", 0.3)]
                 + [("german", "rbp", 100, s, "mistakes", v) for s, v in ((1, 330), (2, 350))]
                 + [("german", "rbp", 100, s, "support_vectors", 100) for s in (1, 2)]
                 + [("german", "rbp", 100, s, "test_accuracy_pct", v) for s, v in ((1, 60.0), (2, 65.0))]
                 + [("german", "rbp", 100, s, "seconds", 0.3) for s in (1, 2)])
    cmp = kol.compare(runs, ref).set_index(["algorithm", "metric"])["status"]
    # KOL's 1 - 0.668 of 1000 = 332 errors; ours 332 by KOL's count
    assert cmp[("projectron", "mistakes")] == "equal"
    assert cmp[("projectron", "support_vectors")] == "equal"
    assert cmp[("projectron", "test_accuracy_pct")] == "differs"
    assert cmp[("projectron", "seconds")] == "shown, not scored"
    # KOL's mean 345 errors lies in our 330..350; its mean 69.5% above our 60..65
    assert cmp[("rbp", "mistakes")] == "within our range"
    assert cmp[("rbp", "test_accuracy_pct")] == "outside our range"
    assert kol.counts(kol.compare(runs, ref)) == {"equal": 2, "differs": 1, "within our range": 2,
                                                   "outside our range": 1}


def test_report_items_show_the_counts_and_table(tmp_path):
    assert kol.report_items(tmp_path) == []
    ref = _ref([("german", "forgetron", 300, 1, 66.1, 300, 71.1, 0.02, 1000)])
    runs = _runs([("german", "forgetron", 300, 0, "mistakes", 339), ("german", "forgetron", 300, 0, "support_vectors", 300),
                  ("german", "forgetron", 300, 0, "test_accuracy_pct", 71.1), ("german", "forgetron", 300, 0, "seconds", 0.3)])
    out = tmp_path / kol.STUDY_DIR
    out.mkdir(parents=True)
    kol.compare(runs, ref).to_csv(out / "comparison.csv", index=False)
    items = kol.report_items(tmp_path)
    assert items[0] == ("h3", "A fifth reference: KOL's budgeted algorithms")
    assert "**2/2 mistake and test-accuracy cells of the deterministic algorithms equal** (support vectors: 1/1 equal)" \
        in items[1][1]
    table = items[2][1]
    assert table.loc[0, "algorithm"] == "Forgetron" and table.loc[0, "mistakes (KOL's count): status"] == "equal"
