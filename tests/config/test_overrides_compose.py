"""Overrides compose with what a config wrote (issue 52, item 4). Changing ``algorithm.name`` -- by
an override, a sweep (``-m``) or ``evaluation.grid`` -- keeps every key the config wrote that is the
same setting of the new algorithm (one schema row for both), refuses in one line a written key that
is not (never drops it silently), and
gives the keys the config did not write the new algorithm's defaults; and ``plab config show``
prints what the plan's grid points run (``Plan.points``)."""

import itertools

import pytest
import yaml

from clitools import one_error, plab
from perceptron_lab import constants as C
from perceptron_lab.config.load import SCHEMA, config_from_dict, load_config, with_overrides
from perceptron_lab.config.overrides import load_with_overrides
from perceptron_lab.config.schema import algorithms_using, same_setting
from perceptron_lab.errors import ConfigError
from perceptron_lab.run.inputs import load_data
from perceptron_lab.run.plan import make_plan

#: A value other than the default of every algorithm that has the key, valid for each of them (an
#: ALMA with p > 2 and the perceptron's dual form both fit the linear kernel; NORMA's eta * lambda < 1).
SETTINGS = {"eta": 0.5, "theta_init": 0.5, "C": 0.5, "tau": 0.25, "lambda": 0.2, "lambda_term": "diagonal",
            "alpha_bound": 5, "form": "dual", "alpha": 0.5, "B": 3.0, "p": 3.0, "budget": 20, "rho": 0.5,
            "schedule": "sqrt"}
ALGORITHM_KEYS = list(dict.fromkeys(p.key for p in SCHEMA if p.section == "algorithm" and p.when is not None))
PAIRS = list(itertools.product(C.ALGORITHMS, repeat=2))
NORMA = """name: norma
dataset: {name: sonar}
kernel: {type: gaussian, sigma: 1.0}
algorithm: {name: norma, budget: 30, eta: 0.5, lambda: 0.2}
training: {epochs: 1}
evaluation: {mode: kfold, folds: 2}
"""


def keys_of(name):
    """The algorithm keys (besides name) algorithm ``name`` uses, from the schema."""
    return [k for k in ALGORITHM_KEYS if name in algorithms_using(f"algorithm.{k}")]


def shared(k, a, b):
    """Whether key ``k`` is one setting of algorithms ``a`` and ``b`` (one schema row for both)."""
    return same_setting(f"algorithm.{k}", a, b)


def config_of(name, grid=None):
    """A config of algorithm ``name`` with every key it has set (:data:`SETTINGS`); the prediction
    rules are left to the default, which depends on the algorithm."""
    cfg = {"name": "c", "dataset": {"name": "sonar"},
           "algorithm": {"name": name, **{k: SETTINGS[k] for k in keys_of(name)}},
           "training": {"epochs": 1}, "evaluation": {"mode": "kfold", "folds": 2}}
    if grid:
        cfg["evaluation"]["grid"] = {"algorithm.name": list(grid)}
    return yaml.safe_dump(cfg, sort_keys=False)


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "norma.yaml").write_text(NORMA)
    return tmp_path


@pytest.fixture(scope="module")
def sonar():
    """The data the plans are made on (their grid points do not depend on it)."""
    return load_data(config_from_dict(yaml.safe_load(config_of("perceptron"))), None)


def show(*args):
    """What ``plab config show ARGS`` prints, read back."""
    status, out, errors = plab("config", "show", *args)
    assert status == 0, errors
    return yaml.safe_load(out)


def points(args, sonar, multirun=False):
    """The resolved config of each grid point of the plan ``plab run ARGS`` makes, by algorithm."""
    _, cfg, _ = load_with_overrides(args[0], args[1:], multirun)
    plan = make_plan(cfg, sonar)
    return {p.algorithm.name: p for p in plan.points.values()}


def without_grid(d):
    """A resolved config without its grid and prediction rules: a grid with a budgeted algorithm
    predicts with the budgeted algorithms' rules at each of its points."""
    return {**d, "evaluation": {k: v for k, v in d["evaluation"].items() if k != "grid"}, "prediction": None}


def test_the_settings_cover_every_key_of_every_algorithm():
    assert set(ALGORITHM_KEYS) == set(SETTINGS)
    assert algorithms_using("algorithm.lambda") == ("perceptron", "norma")
    assert algorithms_using("algorithm.name") == C.ALGORITHMS and algorithms_using("kernel.degree") == ()


@pytest.mark.parametrize("a, b", PAIRS)
def test_an_override_of_the_algorithm_keeps_what_both_use_and_shows_what_runs(here, sonar, a, b):
    (here / "a.yaml").write_text(config_of(a))
    base = load_config("a.yaml")
    unused = [k for k in keys_of(a) if not shared(k, a, b)]
    args = ["a.yaml", f"algorithm.name={b}"]
    if unused:   # written for a, not used by b: refused in one line that names each and the fixes
        line = one_error(2, "config", "show", *args)
        assert all(f"algorithm.{k} = " in line for k in unused), line
        assert all(f"algorithm.{k}=null" in line for k in unused) and f"-m algorithm.name={a},{b}" in line, line
        args += [f"algorithm.{k}=null" for k in unused]
    shown = show(*args)
    runs = points(args, sonar)
    assert list(runs) == [b] and runs[b].to_dict() == shown
    ran = runs[b].algorithm
    for k in keys_of(b):
        attr = next(p.attr for p in SCHEMA if p.path == f"algorithm.{k}")
        if shared(k, a, b):      # one setting of both: a's value
            assert getattr(ran, attr) == getattr(base.algorithm, attr), (k, shown)
        else:                    # not written: b's default
            default = next(p.default for p in SCHEMA if p.path == f"algorithm.{k}" and p.applies(lambda _k: b))
            assert getattr(ran, attr) == default, (k, shown)
    if a == b:
        assert shown == base.to_dict() and runs[b] == base


@pytest.mark.parametrize("a, b", [(a, b) for a, b in PAIRS if a != b])
def test_a_sweep_and_a_grid_over_algorithms_run_what_config_show_prints(here, sonar, a, b):
    (here / "a.yaml").write_text(config_of(a))
    (here / "grid.yaml").write_text(config_of(a, grid=(a, b)))
    single = ["a.yaml", f"algorithm.name={b}"] + [f"algorithm.{k}=null" for k in keys_of(a) if not shared(k, a, b)]
    alone = show(*single)
    for args, multirun in ((["a.yaml", f"algorithm.name={a},{b}"], True), (["grid.yaml"], False)):
        shown = show(*args[:1], *(["-m"] if multirun else []), *args[1:])
        runs = points(args, sonar, multirun)
        assert sorted(runs) == sorted((a, b))
        assert runs[a].to_dict() == shown, args   # the config's own algorithm runs as configured
        # the other runs what the override to it shows (its keys a does not use set to null)
        assert without_grid(runs[b].to_dict()) == without_grid(alone), args


def test_a_norma_sweep_with_rbp_keeps_norma_eta_and_lambda(here, sonar):
    """The bug as reported: ``-m algorithm.name=norma,rbp`` ran NORMA with eta 0.1 and lambda 0."""
    runs = points(["norma.yaml", "algorithm.name=norma,rbp"], sonar, multirun=True)
    assert (runs["norma"].algorithm.eta, runs["norma"].algorithm.lambda_) == (0.5, 0.2)
    assert (runs["rbp"].algorithm.eta, runs["rbp"].algorithm.lambda_, runs["rbp"].algorithm.budget) == (None, None, 30)
    shown = show("norma.yaml", "-m", "algorithm.name=norma,rbp")
    assert shown["algorithm"]["eta"] == 0.5 and shown == runs["norma"].to_dict()
    # the same as a grid written in the file
    (here / "grid.yaml").write_text(NORMA.replace("folds: 2}", "folds: 2, grid: {algorithm.name: [norma, rbp]}}"))
    assert {k: v.algorithm for k, v in points(["grid.yaml"], sonar).items()} == \
        {k: v.algorithm for k, v in runs.items()}


def test_an_override_to_an_algorithm_without_the_keys_is_one_line_with_the_fix(here):
    line = one_error(2, "run", "norma.yaml", "algorithm.name=rbp", "--out", here / "never", "-q")
    assert line == ("plab: error: norma.yaml (override): algorithm.name = 'rbp': algorithm.eta = 0.5, "
                    "algorithm.lambda = 0.2, which the config sets for NORMA, are not settings of the RBP (a key of "
                    "the same name there is another setting, or none); remove them from the config, override them "
                    "in the same call (algorithm.eta=null algorithm.lambda=null, or the new algorithm's values), or "
                    "sweep -m algorithm.name=norma,rbp to run each algorithm with the keys it uses")
    assert not (here / "never").exists()
    ran = show("norma.yaml", "algorithm.name=rbp", "algorithm.eta=null", "algorithm.lambda=null")["algorithm"]
    assert ran == {"name": "rbp", "budget": 30}
    # a sweep none of whose algorithms uses them: one line, what to do
    line = one_error(2, "config", "show", "norma.yaml", "-m", "algorithm.name=rbp,forgetron")
    assert "algorithm.eta = 0.5, algorithm.lambda = 0.2: they are used by no algorithm of evaluation.grid " \
           "(algorithm.name: rbp, forgetron); remove them from the config, or add to the grid" in line, line


def test_an_override_to_the_same_algorithm_changes_nothing(here):
    (here / "p.yaml").write_text("dataset: {name: sonar}\nalgorithm: {eta: 0.5, lambda: 0.2, tau: 0.1}\n")
    for name in ("p.yaml", "norma.yaml"):
        cfg = load_config(name)
        assert with_overrides(cfg, {"algorithm.name": cfg.algorithm.name}) == cfg
        assert show(name, f"algorithm.name={cfg.algorithm.name}") == show(name)


def test_defaults_follow_the_algorithm_and_written_values_follow_the_config(here):
    (here / "bare.yaml").write_text("dataset: {name: sonar}\nalgorithm: {name: norma}\n")
    (here / "p.yaml").write_text("dataset: {name: sonar}\n")
    # not written: the new algorithm's defaults (NORMA's eta 0.1, the perceptron's 1; its rules)
    assert show("bare.yaml", "algorithm.name=perceptron")["algorithm"]["eta"] == C.DEFAULT_ETA
    to_rbp = show("p.yaml", "algorithm.name=rbp")
    assert to_rbp["algorithm"] == {"name": "rbp", "budget": None}
    assert tuple(to_rbp["prediction"]["rules"]) == C.BUDGET_DEFAULT_RULES
    # written, even when equal to the default (which to_dict leaves out), and through chained overrides:
    # NORMA's learning rate is not the perceptron's, so it is refused, not carried
    (here / "n.yaml").write_text("dataset: {name: sonar}\nalgorithm: {name: norma, eta: 0.1}\n")
    cfg = with_overrides(load_config("n.yaml"), {"training.epochs": 3})
    with pytest.raises(ConfigError, match=r"algorithm.eta = 0.1, which the config sets for NORMA, is not a setting"):
        with_overrides(cfg, {"algorithm.name": "perceptron"})
    assert with_overrides(cfg, {"algorithm.name": "perceptron", "algorithm.eta": None}).algorithm.eta == C.DEFAULT_ETA
    # one setting of both (the Projectron's distance threshold is the Projectron++'s): carried
    (here / "pj.yaml").write_text("dataset: {name: sonar}\nalgorithm: {name: projectron, eta: 0.3}\n")
    assert with_overrides(load_config("pj.yaml"), {"algorithm.name": "projectron++"}).algorithm.eta == 0.3


def test_keys_written_in_a_base_config_count_as_written(here, sonar):
    (here / "child.yaml").write_text("extends: norma.yaml\nname: child\ntraining: {epochs: 2}\n")
    assert "algorithm.eta" in load_config("child.yaml").written
    line = one_error(2, "config", "show", "child.yaml", "algorithm.name=perceptron")
    assert ("algorithm.budget = 30, algorithm.eta = 0.5, algorithm.lambda = 0.2, which the config sets for NORMA, "
            "are not settings of the perceptron") in line, line
    runs = points(["child.yaml", "algorithm.name=norma,perceptron"], sonar, multirun=True)
    # NORMA's eta and lambda are not the perceptron's learning rate and lambda-trick: its defaults
    assert (runs["perceptron"].algorithm.eta, runs["perceptron"].algorithm.lambda_) == (C.DEFAULT_ETA, 0.0)
    assert runs["norma"].algorithm == load_config("child.yaml").algorithm


def test_an_override_of_the_algorithm_of_a_grid_over_algorithms_runs_that_algorithm(here, sonar):
    """Not a grid point: the override takes algorithm.name out of the grid, and composes as any other."""
    (here / "g.yaml").write_text(NORMA.replace("folds: 2}", "folds: 2, grid: {algorithm.name: [norma, rbp], "
                                                            "algorithm.budget: [10, 20]}}"))
    line = one_error(2, "config", "show", "g.yaml", "algorithm.name=rbp")
    assert "algorithm.eta = 0.5, algorithm.lambda = 0.2, which the config sets for NORMA, are not settings of the RBP" \
        in line, line
    runs = points(["g.yaml", "algorithm.name=norma"], sonar)
    assert list(runs) == ["norma"] and (runs["norma"].algorithm.eta, runs["norma"].algorithm.lambda_) == (0.5, 0.2)
    assert show("g.yaml", "algorithm.name=norma")["evaluation"]["grid"] == {"algorithm.budget": [10, 20]}


def test_a_kernel_override_refuses_a_written_width_and_a_kernel_grid_keeps_each_points_keys(here, sonar):
    """The same rule for the kernel's selector: a written sigma is not dropped silently by
    kernel.type=poly; a grid over kernel.type gives each point the keys of its kernel."""
    (here / "g.yaml").write_text("dataset: {name: sonar}\nkernel: {type: gaussian, sigma: 2.0}\n"
                                 "evaluation: {mode: kfold, folds: 2}\n")
    line = one_error(2, "config", "show", "g.yaml", "kernel.type=poly")
    assert "kernel.sigma = 2.0, which the config sets, is not used with kernel.type = 'poly'" in line, line
    assert show("g.yaml", "kernel.type=poly", "kernel.sigma=null")["kernel"].get("sigma") is None
    (here / "grid.yaml").write_text("dataset: {name: sonar}\nkernel: {type: gaussian, sigma: 2.0}\n"
                                    "evaluation: {mode: kfold, folds: 2, grid: {kernel.type: [gaussian, poly]}}\n")
    _, cfg, _ = load_with_overrides("grid.yaml", [])
    kernels = {p.kernel.type: p.kernel for p in make_plan(cfg, sonar).points.values()}
    assert kernels["gaussian"].sigma == 2.0 and kernels["poly"].sigma is None
