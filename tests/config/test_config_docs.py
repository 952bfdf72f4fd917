"""The config reference: `plab config docs`, the documentation's table (docs/configuration.md,
generated from the same schema; this test fails when they drift apart: run `make docs`), and
did-you-mean hints for values."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from perceptron_lab.config import docs as config_docs
from perceptron_lab.cli.main import main
from perceptron_lab.config.schema import SCHEMA

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_docs_reference_equals_the_schema():
    section = config_docs.readme_section(PAGE.read_text(encoding="utf-8"))
    assert section is not None, "docs/configuration.md lost its config reference markers"
    assert section == config_docs.markdown(), "docs/configuration.md is stale: run `make docs`"


def test_config_docs_lists_every_key_with_what_a_user_needs():
    r = CliRunner().invoke(main, ["config", "docs"])
    assert r.exit_code == 0
    text = r.output
    for p in SCHEMA:
        assert f"\n{p.path}\n" in text, p.path
    # the keys the old hand-written block left out, and defaults it had wrong
    for key in ("algorithm.alpha", "algorithm.B", "algorithm.p", "evaluation.outer", "evaluation.fold_seed",
                "evaluation.confidence", "algorithm.form", "training.chunk_size", "training.cache_limit_gb",
                "output.figures"):
        assert f"\n{key}\n" in text
    after = text.split("\ntraining.dtype\n", 1)[1]
    assert after.split("\n", 1)[0].strip() == "type: string; default: float64"
    assert "allowed: float32, float64" in after.split("\ntraining.", 1)[0]
    alpha = text.split("\nalgorithm.alpha\n", 1)[1].split("\nalgorithm.", 1)[0]
    assert "applies when algorithm.name: alma" in alpha
    curve = text.split("\ntraining.curve_every\n", 1)[1].split("\ntraining.", 1)[0]
    assert "default: null" in curve


@pytest.mark.parametrize("key, value, hint", [
    ("kernel.type", "polynomial", "poly"), ("kernel.type", "rbf", "gaussian"), ("kernel.type", "Linear", "linear"),
    ("kernel.type", "gausian", "gaussian"), ("evaluation.mode", "k-fold", "kfold"),
    ("training.dtype", "double", "float64")])
def test_did_you_mean_for_values(tmp_path, key, value, hint):
    section, name = key.split(".")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: c\ndataset: {{name: sonar}}\n{section}: {{{name}: {value}}}\n")
    r = CliRunner().invoke(main, ["config", "check", str(cfg)])
    assert r.exit_code == 2
    assert f"got '{value}' (did you mean '{hint}'?)" in r.output


def test_rule_values_get_a_hint_too(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("name: c\ndataset: {name: sonar}\nprediction: {rules: [voted, avg]}\n")
    r = CliRunner().invoke(main, ["config", "check", str(cfg)])
    assert r.exit_code == 2 and "did you mean 'vote'?" in r.output
