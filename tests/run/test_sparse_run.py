"""`plab run` on LIBSVM files: sparse from the file to the engine where the engine reads CSR rows,
with the same results as the dense run, and a clear refusal where a dense copy would not fit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import yaml
from click.testing import CliRunner
from sklearn.datasets import dump_svmlight_file

import perceptron_lab.run.inputs as units
from perceptron_lab.cli.main import main
from perceptron_lab.config.load import config_from_dict
from perceptron_lab.run.store import data_fingerprint


def _write_problem(folder, n=300, nt=100, f=3000, seed=0):
    """A small text-like problem: integer term counts, labels from a sparse hyperplane."""
    rng = np.random.default_rng(seed)
    X = sp.random(n + nt, f, density=0.01, random_state=seed, format="csr",
                  data_rvs=lambda k: rng.integers(1, 4, size=k).astype(float))
    w = rng.normal(size=f) * (rng.random(f) < 0.1)
    y = np.where(X @ w > 0, 1, -1)
    dump_svmlight_file(X[:n], y[:n], str(folder / "train.libsvm"))
    dump_svmlight_file(X[n:], y[n:], str(folder / "test.libsvm"))


CONFIGS = {
    "perceptron_test_split": """
name: sp_perceptron
dataset: {path: train.libsvm, test_path: test.libsvm}
training: {epochs: 2, checkpoints: [1, 2], permutations: 2}
prediction: {rules: [last, avg, vote, last_norm, random, longest]}
output: {figures: false}
""",
    "perceptron_kfold_rules_combined": """
name: sp_kfold
dataset: {path: train.libsvm}
training: {epochs: 1, permutations: 2}
prediction: {rules: [last, avg]}
evaluation: {mode: kfold, folds: 3}
output: {figures: false}
""",
    "margin_perceptron": """
name: sp_margin
dataset: {path: train.libsvm, test_path: test.libsvm}
algorithm: {tau: 0.5, lambda: 0.1, theta_init: avg_sq_norm, C: theta_init, eta: 0.5}
training: {epochs: 2, permutations: 1}
prediction: {rules: [last, avg, vote]}
output: {figures: false}
""",
    "merged_splits_and_sizes": """
name: sp_merged
dataset: {path: train.libsvm, test_path: test.libsvm, merge_splits: true, train_size: 350}
training: {epochs: 1, permutations: 2}
prediction: {rules: [last, avg, vote]}
evaluation: {mode: kfold, folds: 2}
output: {figures: false}
""",
    "alma2": """
name: sp_alma
dataset: {path: train.libsvm, test_path: test.libsvm}
algorithm: {name: alma, alpha: 0.9}
training: {epochs: 1, permutations: 2}
prediction: {rules: [last, avg, vote]}
output: {figures: false}
""",
}


def _run(cfg_path, out, monkeypatch, dense: bool):
    if dense:
        monkeypatch.setattr(units, "keeps_sparse", lambda cfg: False)
    units._DATA_CACHE.clear()
    r = CliRunner().invoke(main, ["run", str(cfg_path), "--out", str(out), "-q"], catch_exceptions=False)
    monkeypatch.undo()
    units._DATA_CACHE.clear()
    return r


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_libsvm_run_reads_csr_and_writes_the_dense_runs_results(tmp_path, monkeypatch, name):
    _write_problem(tmp_path)
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(CONFIGS[name])
    cfg = config_from_dict(yaml.safe_load(CONFIGS[name]), source=str(cfg_path))
    assert units.keeps_sparse(cfg)
    ds = units.load_data(cfg)
    assert sp.issparse(ds.X_train) and (ds.X_test is None or sp.issparse(ds.X_test))
    units._DATA_CACHE.clear()
    r = _run(cfg_path, tmp_path / "sparse", monkeypatch, dense=False)
    assert r.exit_code == 0, r.output
    r = _run(cfg_path, tmp_path / "dense", monkeypatch, dense=True)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "sparse" / "results.csv").read_bytes() == (tmp_path / "dense" / "results.csv").read_bytes()
    # a second invocation reuses every part: the data fingerprint of the CSR data is stable
    r = _run(cfg_path, tmp_path / "sparse", monkeypatch, dense=False)
    assert r.exit_code == 0 and " 0 run(s) computed" in r.output, r.output


def test_settings_that_read_dense_rows_load_libsvm_dense(tmp_path):
    _write_problem(tmp_path)
    for extra in ({"kernel": {"type": "gaussian", "sigma": 2.0}}, {"kernel": {"type": "poly", "degree": 2, "scale": 1.0}},
                  {"dataset": {"path": "train.libsvm", "preprocess": "unit_norm"}},
                  {"algorithm": {"name": "forgetron", "budget": 10}}):
        d = {"name": "x", "dataset": {"path": "train.libsvm"}, "evaluation": {"mode": "kfold", "folds": 2}, **extra}
        cfg = config_from_dict(d, source=str(tmp_path / "c.yaml"))
        assert not units.keeps_sparse(cfg), extra
        units._DATA_CACHE.clear()
        assert isinstance(units.load_data(cfg).X_train, np.ndarray)
    units._DATA_CACHE.clear()


def test_a_libsvm_file_too_large_to_densify_is_refused_and_the_sparse_setting_runs(tmp_path):
    # 11,000 examples x 110,000 features, each present in one example: 9.7 GB dense, 110,000 nonzeros
    lines = [f"{1 if i % 3 else -1} " + " ".join(f"{i * 10 + k + 1}:{1 + (i + k) % 2}" for k in range(10))
             for i in range(11000)]
    (tmp_path / "wide.libsvm").write_text("\n".join(lines) + "\n")
    base = "name: wide\ndataset: {path: wide.libsvm}\nevaluation: {mode: kfold, folds: 2}\noutput: {figures: false}\n"
    (tmp_path / "c.yaml").write_text(base + "kernel: {type: gaussian, sigma: 1}\n")
    r = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o"), "-q"])
    assert r.exit_code == 3
    line = r.output.strip().splitlines()[-1]
    assert line.startswith("plab: error:") and "as a dense matrix" in line and "kernel.type linear" in line
    # the fix: the linear kernel (the default), which reads the file sparse
    (tmp_path / "c.yaml").write_text(base + "kernel: {type: linear}\n")
    units._DATA_CACHE.clear()
    r = CliRunner().invoke(main, ["run", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "o"), "-q"])
    units._DATA_CACHE.clear()
    assert r.exit_code == 0, r.output


def test_the_fingerprint_of_csr_data_depends_on_the_matrix_alone():
    """The same matrix, however stored (duplicates, unsorted indices, another process), has one
    fingerprint; another matrix another."""
    from perceptron_lab.datasets.base import Dataset

    X = sp.csr_matrix(np.array([[0, 2.0, 0, 1], [3, 0, 0, 0], [0, 0, 0, 0]]))
    messy = sp.coo_matrix(([1.0, 1.0, 1.0, 3.0], ([0, 0, 0, 1], [1, 1, 3, 0])), shape=(3, 4)).tocsr()
    y = np.array([0, 1, 0])

    def fp(M):
        return data_fingerprint(Dataset("d", M, y, None, None, [0, 1], {}))

    code = ("import numpy as np, scipy.sparse as sp; from perceptron_lab.run.store import data_fingerprint; "
            "from perceptron_lab.datasets.base import Dataset; "
            "X = sp.csr_matrix(np.array([[0, 2.0, 0, 1], [3, 0, 0, 0], [0, 0, 0, 0]])); "
            "print(data_fingerprint(Dataset('d', X, np.array([0, 1, 0]), None, None, [0, 1], {})))")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert fp(X) == fp(messy) == other
    X2 = X.copy()
    X2[0, 1] = 3.0
    assert fp(X2) != fp(X)
