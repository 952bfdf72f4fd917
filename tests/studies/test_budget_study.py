"""The budget study (perceptron_lab.studies.budget): its runs' rows, the Nyström peer's kernel, the
summary tables and the report section, on small USPS runs."""

import math

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.errors import OutputError
from perceptron_lab.engine.kernels import Kernel, gram
from perceptron_lab.studies import budget as study

from clitools import plab


def test_sklearn_kernel_is_the_runs_kernel():
    """Nyström approximates the kernel the budgeted runs use: scikit-learn's pairwise kernel with
    the translated parameters equals our Gram matrix (poly scaled to max K(x, x) = 1, Gaussian)."""
    from sklearn.metrics.pairwise import pairwise_kernels

    from perceptron_lab.engine.budget import unit_diag_kernel

    rng = np.random.default_rng(1)
    X = rng.integers(0, 256, size=(30, 20)).astype(float)
    for k in (unit_diag_kernel(Kernel("poly", degree=4, scale=50.0), X), Kernel("gaussian", sigma=300.0)):
        kw = study.sklearn_kernel(k)
        name = kw.pop("kernel")
        np.testing.assert_allclose(pairwise_kernels(X[:7], X, metric=name, **kw), gram(k, X[:7], X), rtol=1e-10)


def _rows():
    r = []
    for b, e in ((100, 9.0), (200, 6.4), (500, 6.0)):
        r.append({"panel": "usps", "method": "forgetron", "budget": float(b), "rule": "avg", "test_error_pct": e})
    r.append({"panel": "usps", "method": "rbp", "budget": 100.0, "rule": "avg", "test_error_pct": 12.0})
    r.append({"panel": "usps", "method": "perceptron", "budget": math.inf, "rule": "vote", "test_error_pct": 5.9})
    r.append({"panel": "usps", "method": "perceptron", "budget": math.inf, "rule": "last", "test_error_pct": 6.3})
    return pd.DataFrame(r)


def test_reach_and_error_tables():
    reach = study.reach_table(_rows(), "usps").set_index("method")["smallest budget within 0.5 points"]
    assert reach["Forgetron"] == 200  # 6.4 <= 5.9 + 0.5; 9.0 is not
    assert reach["RBP"] == "none tried"
    t = study.error_table(_rows(), "usps")
    assert list(t.columns) == ["method", "rule", "100", "200", "500", "unbounded"]
    row = t[(t["method"] == "Forgetron") & (t["rule"] == "avg")].iloc[0]
    assert (row["100"], row["500"]) == (9.0, 6.0) and math.isnan(row["unbounded"])


def test_study_from_small_runs(tmp_path, data_dir):
    """Two small USPS runs (budgets 20 and 40 on 600 training digits) give the study's rows: the
    error of each rule as results.csv holds it, training seconds from timings.json; the summary,
    figures and report section are written from them."""
    out = tmp_path / "results" / "budget"
    small = ["dataset.train_size=600", "dataset.test_size=300", "--data-dir", data_dir, "-q"]
    code, _, err = plab("run", "budget/usps", "--out", out / "usps", "-m", "algorithm.budget=20,40", *small)
    assert code == 0, err
    code, _, err = plab("run", "budget/usps_perceptron", "--out", out / "usps_perceptron", *small)
    assert code == 0, err
    df = study.collect_runs(tmp_path / "results")
    assert set(df["method"]) == set(study.ALGORITHMS) | {"perceptron"}
    assert sorted(df.loc[df["method"] == "rbp", "budget"].unique()) == [20.0, 40.0]
    res = pd.read_csv(out / "usps" / "results.csv", dtype={"class": str})
    grid = pd.read_csv(out / "usps" / "grid.csv")
    gp = int(grid[(grid["algorithm.name"] == "forgetron") & (grid["algorithm.budget"] == 20)]["grid_point"].iloc[0])
    want = res[(res["grid_point"] == gp) & (res["class"] == "all") & (res["rule"] == "vote")
               & (res["metric"] == "test_error_pct")]["value"].iloc[0]
    got = df[(df["method"] == "forgetron") & (df["budget"] == 20) & (df["rule"] == "vote")]["test_error_pct"].iloc[0]
    assert got == pytest.approx(want)
    assert (df["train_seconds"] > 0).all()
    paths = study.write_study(tmp_path / "results", data_dir, train=False, progress=None)
    assert all(p.exists() for p in paths)
    # a Nyström table trained for other runs of the panel is refused, not mixed in
    pd.DataFrame([{"panel": "usps", "method": "nystroem_sgd", "budget": 20.0, "rule": "avg",
                   "test_error_pct": 9.0, "config_hash": "0" * 12}]).to_csv(out / "nystroem.csv", index=False)
    with pytest.raises(OutputError, match="trained for other runs of usps"):
        study.write_study(tmp_path / "results", data_dir, train=False, progress=None)
    (out / "nystroem.csv").unlink()
    md = (out / "summary.md").read_text()
    assert "USPS" in md and "Forgetron" in md and "error_vs_budget_avg.png" in md
    kinds = [k for k, _ in study.report_items(tmp_path / "results")]
    assert kinds[0] == "h2" and "table" in kinds and "img" in kinds
    from perceptron_lab.report.tables import write_report

    md, index = write_report([tmp_path / "results"], tmp_path / "report")
    assert "memory budget" in md.read_text() and 'href="budget.html"' in index.read_text()
    page = (tmp_path / "report" / "budget.html").read_text()
    assert "Forgetron" in page and "../results/budget/error_vs_budget_avg.png" in page


def test_nystroem_peer_rows(data_dir):
    """The Nyström peer on USPS with 50 components: one row per rule of our linear perceptron and one
    for the averaged SGD perceptron, errors well below chance."""
    rows = pd.DataFrame(study.nystroem_rows(study.PANELS[1], data_dir, budgets=(50,)))
    assert sorted(zip(rows["method"], rows["rule"])) == [
        ("nystroem_perceptron", "avg"), ("nystroem_perceptron", "last"), ("nystroem_perceptron", "vote"),
        ("nystroem_sgd", "avg")]
    assert (rows["test_error_pct"] < 40).all() and (rows["support_vectors"] == 50).all()
