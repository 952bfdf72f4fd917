"""Full-data reproduction checks (slow: `make test-full`)."""

from pathlib import Path

import pytest

from perceptron_lab.config.load import load_config, with_overrides
from perceptron_lab.run.experiment import run_experiment
from perceptron_lab.run.reference import reference_table
pytest.importorskip("perceptron_lab.papers.fs1999", reason="the fs1999 paper plug-in is not installed")
from perceptron_lab.papers.fs1999.tables import fs1999_comparison

pytestmark = pytest.mark.slow


def test_fs1999_d4_first_epoch_on_full_mnist(tmp_path, data_dir):
    """One permutation of Table 1's d = 4 setting to T = 1: every in-scope cell within tolerance."""
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "mnist_d4.yaml")
    cfg = with_overrides(cfg, {"training.permutations": 1, "training.epochs": 1,
                               "training.checkpoints": [0.1, 1], "training.curve_every": None})
    res = run_experiment(cfg, out_dir=tmp_path / "run", data_dir=data_dir, progress=False)
    cmp = fs1999_comparison(res.results, table=1, degree=4)
    scoped = cmp[cmp["in_scope"].astype(bool) & cmp["paper"].notna() & (cmp["n_runs"] > 0)]
    assert len(scoped) == 9  # 7 error rows + SupVec + Mistake at T = 1
    bad = scoped[~scoped["within"].astype(bool)]
    assert bad.empty, bad[["row", "T", "paper", "ours_mean"]].to_string()
    paper_mistakes = reference_table("fs1999_table1").query("d == 4 and T == 1 and metric == 'mistakes'")
    assert float(paper_mistakes["value"].iloc[0]) == 7977
