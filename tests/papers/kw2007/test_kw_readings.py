"""Khardon & Wachman (2007): the readings plab scores where the paper is silent or ambiguous, and
the variants that keep the other reading -- promoters' instance name (``dataset.instance_name``) and
Table 5 over replicate runs (``training.seed``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perceptron_lab.config.load import config_from_dict, load_config, with_overrides
from perceptron_lab.errors import ConfigError
from perceptron_lab.run import plan as run_plan
from perceptron_lab.run.evaluation import Grid

ROOT = Path(__file__).resolve().parents[3]
KW = ROOT / "configs" / "kw2007"


# ----------------------------------------------------------------------------- promoters' instance name


def test_instance_name_is_a_promoters_setting_checked_by_the_schema():
    ok = config_from_dict({"dataset": {"name": "promoters", "instance_name": "nominal"}})
    assert ok.dataset.instance_name == "nominal"
    assert config_from_dict({"dataset": {"name": "promoters"}}).dataset.instance_name == "drop"
    with pytest.raises(ConfigError, match=r"dataset\.instance_name = 'nominal' with dataset\.name = 'sonar': only "
                                          r"promoters has an instance name"):
        config_from_dict({"dataset": {"name": "sonar", "instance_name": "nominal"}})
    with pytest.raises(ConfigError, match=r"dataset\.instance_name"):
        config_from_dict({"dataset": {"name": "promoters", "instance_name": "keep"}})
    # an override is checked by the same table
    with pytest.raises(ConfigError, match=r"only promoters has an instance name"):
        with_overrides(config_from_dict({"dataset": {"name": "sonar"}}), {"dataset.instance_name": "nominal"})
    # at its default it stays out of the resolved config, so recorded results keep their hash
    assert "instance_name" not in config_from_dict({"dataset": {"name": "promoters"}}).to_dict()["dataset"]


def test_table3_uci_scores_the_name_as_a_nominal_attribute_and_keeps_the_dropped_name_as_a_variant(data_dir):
    from perceptron_lab.run.inputs import load_data

    cfg = load_config(KW / "table3_uci.yaml")
    # a grid point takes the key where it applies (promoters) and leaves it at the others
    shapes = {name: load_data(with_overrides(cfg, {"dataset.name": name}), data_dir).X_train.shape[1]
              for name in ("promoters", "sonar")}
    assert shapes == {"promoters": 106 + 228, "sonar": 60}
    variant = load_config(KW / "table3_uci_promoters_name_dropped.yaml")
    assert variant.paper == cfg.paper and variant.dataset.instance_name == "drop"
    assert Grid.from_config(variant).settings() == [s for s in Grid.from_config(cfg).settings() if s[0] == "promoters"]
    assert load_data(variant, data_dir).X_train.shape[1] == 228


# ----------------------------------------------------------------------------- Table 5 over replicates


def _table5_cfg(seeds):
    return config_from_dict({
        "paper": "kw2007/table5",
        "dataset": {"name": "sonar"},
        "algorithm": {"eta": 0.4, "theta_init": "avg_sq_norm", "C": "theta_init"},
        "training": {"epochs": 5, "seed": 2007},
        "prediction": {"rules": ["last"]},
        "evaluation": {"mode": "kfold", "folds": 3,
                       "grid": {"training.seed": seeds, "evaluation.fold_train_size": [10], "algorithm.tau": [0]}}})


def _results(cfg, acc):
    """Results as parts write them (text), with accuracy acc[draw][fold] at every grid point."""
    grid = Grid.from_config(cfg)
    seeds = list(cfg.evaluation.grid["training.seed"])
    rows = []
    for g, point in enumerate(grid.points):
        for k, a in enumerate(acc[seeds.index(point["training.seed"])]):
            rows.append(["sonar", "linear", "1", "perceptron", f"p{g}", str(g), str(k), "0", "5", "last", "false", "all",
                         "test_error_pct", "%.6g" % (100.0 - a)])
    return pd.DataFrame(rows, columns=run_plan.RESULT_COLUMNS)


def test_table5_cell_over_replicate_runs_is_the_mean_of_the_draws_with_their_central_95_percent():
    from perceptron_lab.papers.kw2007.tables import table5_comparison

    acc = [[70.0, 74.0, 78.0], [60.0, 62.0, 70.0], [80.0, 80.0, 83.0]]   # per draw, per fold
    cfg = _table5_cfg([2007, 2008, 2009])
    c = table5_comparison(cfg, _results(cfg, acc))
    a = c[c["column"] == "n=10 accuracy"].iloc[0]
    means = [74.0, 64.0, 81.0]
    assert a["ours_mean"] == pytest.approx(73.0) and a["n_runs"] == 3
    assert a["ours_std"] == pytest.approx(math.sqrt(((1.0) ** 2 + 9.0 ** 2 + 8.0 ** 2) / 2))
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert (a["sampling_lo"], a["sampling_hi"], a["sampling_basis"]) == (pytest.approx(lo), pytest.approx(hi), "draws")
    assert a["detail"].startswith("3 draws of each fold's 10 examples and training order (seed 2007-2009)")
    # the T-interval over the folds of the accuracies averaged over the draws: 70, 72, 77 (t_{2, 0.975} = 4.303)
    folds = np.array([70.0, 72.0, 77.0])
    s = math.sqrt(((folds - folds.mean()) ** 2).mean())
    assert a["ours_ci"] == pytest.approx(4.302652729911275 * s / math.sqrt(2))
    sd = c[c["column"] == "n=10 std"].iloc[0]
    per_draw_sd = [math.sqrt(((np.array(x) - np.mean(x)) ** 2).mean()) for x in acc]
    assert sd["ours_mean"] == pytest.approx(np.mean(per_draw_sd)) and not sd["in_scope"]
    # one run: the mean and the T-interval over its folds, as before replicates
    one = _table5_cfg([2007])
    a1 = table5_comparison(one, _results(one, acc[:1])).iloc[0]
    assert a1["ours_mean"] == pytest.approx(74.0) and a1["n_runs"] == 3 and a1["sampling_basis"] == "folds"


def test_table5_scores_ten_draws_and_keeps_the_single_run_as_a_variant():
    import json

    scored, single = load_config(KW / "table5.yaml"), load_config(KW / "table5_single_run.yaml")
    g = Grid.from_config(scored)
    i = g.setting_keys.index("training.seed")
    assert sorted({s[i] for s in g.settings()}) == list(range(2007, 2017))
    assert "training.seed" not in single.evaluation.grid and single.training.seed == 2007
    # the scored config is the single run's protocol over training.seed, nothing else
    a, b = scored.to_dict(), single.to_dict()
    grid = dict(a["evaluation"]["grid"])
    assert grid.pop("training.seed") == list(range(2007, 2017))
    a["evaluation"]["grid"] = grid
    assert {k: v for k, v in a.items() if k != "name"} == {k: v for k, v in b.items() if k != "name"}
    # the scaling variants still run once: their recorded results belong to the same resolved configs
    for name in ("table5_raw_units", "table5_standardized"):
        info = json.loads((ROOT / "results" / "kw2007" / "variants" / name / "run.json").read_text())
        cfg = with_overrides(load_config(KW / f"{name}.yaml"), {"output.dir": f"results/kw2007/variants/{name}"})
        assert run_plan.results_hash(cfg) == info["config_hash"], name
