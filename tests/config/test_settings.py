"""One table of settings and ranges for every door (perceptron_lab.config.settings).

Every door into the engine (a config, an override, the scikit-learn estimators, the online classes)
refuses the same values with a ValueError (a ConfigError for a config), generated from the table
itself: just outside each range (negative where >= 0, a fraction where an integer, inf and NaN where
finite, a bool where a number, unknown text where a choice). A good value is accepted everywhere.
A refused ``learn_one`` changes nothing, and ``fit`` refuses before any training a run that
``plab run``'s size guard refuses.

Before the table (at d572cdb), 169 of the 471 refusal cases of the Python doors failed: the online
classes accepted 52 values (``sigma=-1``, ``degree=2.7``, ``eta=-1``, ``B=inf``...), crashed on 18
at the first ``learn_one`` (KeyError for an unknown kernel, ZeroDivisionError for ``sigma=0`` or NaN,
OverflowError for ``degree=inf``) and refused 62 in words of their own; the estimators accepted
``True`` as a number (37). 30 of the 54 refused ``learn_one`` calls changed the model.
"""

from __future__ import annotations

import inspect
import math
import pickle
import time
import warnings

import numpy as np
import pytest

from perceptron_lab import ALMA, BudgetPerceptron, MarginPerceptron, VotedPerceptron
from perceptron_lab.config.checks import _Choice, _Flag, _ListOf, _Literal, _Number, _Union
from perceptron_lab.config.load import config_from_dict, with_overrides
from perceptron_lab.config.settings import PATHS, check_setting, schema_entry, setting
from perceptron_lab.constants import KERNELS_WITH_SIGMA
from perceptron_lab.errors import ConfigError
from perceptron_lab.estimators import online
from perceptron_lab.model import bounds

X = np.array([[0., 1.], [1., 0.], [0., 2.], [2., 0.], [1., 3.], [3., 1.]])
Y = np.array([0, 1, 0, 1, 0, 1])
STREAM = [({"a": 0.0, "b": 1.0}, 0), ({"a": 1.0}, 1), ({"a": 0.1, "b": 2.0}, 0), ({"a": 0.9}, 1)]

#: The algorithm whose schema entries apply at each door (keys the schema states per algorithm).
ESTIMATORS = {VotedPerceptron: "perceptron", MarginPerceptron: "perceptron", ALMA: "alma", BudgetPerceptron: "norma"}
ONLINE = {online.KernelPerceptron: "stoptron", online.ALMA: "alma", online.BudgetKernelPerceptron: "norma"}
DOORS = {**ESTIMATORS, **ONLINE}


# ----------------------------------------------------------------------------- values from the table


def _alternatives(check):
    return check.alternatives if isinstance(check, _Union) else (check,)


def _accepts(check, value) -> bool:
    try:
        check.convert(value)
        return True
    except Exception:  # noqa: BLE001 - any refusal
        return False


def outside(check) -> list:
    """Values just outside each range of ``check``, and of the wrong kind, that ``check`` refuses."""
    out = []
    for alt in _alternatives(check):
        if isinstance(alt, _Number):
            if alt.lo is not None:
                out += [alt.lo - 1] + ([alt.lo] if alt.lo_open else [-1e-9] if alt.lo == 0 else [])
            if alt.hi is not None:
                out += [alt.hi + 1] + ([alt.hi] if alt.hi_open else [])
            if alt.integer:
                out.append((alt.lo or 0) + 1.7)
            out += [math.inf, -math.inf, math.nan, True]
        elif isinstance(alt, _Choice):
            out += ["no-such-" + alt.options[0], alt.options[0].upper(), 1.0]
        elif isinstance(alt, _Literal):
            out += [a + "x" for a in alt.accepted if isinstance(a, str)]
        elif isinstance(alt, _Flag):
            out += [1, 0, "true", None]
    out.append("no-such-value")
    bad, seen = [], set()
    for v in out:
        if (type(v), repr(v)) not in seen and not _accepts(check, v):
            seen.add((type(v), repr(v)))
            bad.append(v)
    return bad


def inside(check):
    """One value ``check`` accepts, other than the usual default where there is a choice."""
    alt = _alternatives(check)[0]
    if isinstance(alt, _Number):
        v = (alt.lo if alt.lo is not None else 0) + 1
        v = min(v, alt.hi) if alt.hi is not None else v
        return int(v) if alt.integer else float(v)
    if isinstance(alt, _Choice):
        return alt.options[1] if len(alt.options) > 1 else alt.options[0]
    if isinstance(alt, _Flag):
        return False
    return alt.accepted[0]


def _python_settings(cls) -> dict:
    """A door's settings: its parameters that are settings of the table, each with the schema's
    range (the door's own table, where it narrows a choice)."""
    names = [n for n in inspect.signature(cls.__init__).parameters if n in PATHS]
    own = getattr(cls, "_schema_settings", {})
    return {n: own.get(n) or setting(n, DOORS[cls]) for n in names}


def _python_cases(kind):
    for cls in DOORS:
        for name, s in _python_settings(cls).items():
            schema = setting(name, DOORS[cls]).check
            bad = outside(schema)
            if isinstance(s.check, _Choice) and isinstance(schema, _Choice):  # a door's narrower choice
                bad += [o for o in schema.options if o not in s.check.options]
            values = bad if kind == "bad" else [inside(s.check)]
            for v in values:
                yield pytest.param(cls, name, v, id=f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__name__}-{name}-{v!r}")


def _config_paths():
    """(schema key, algorithm) of every setting some Python door has."""
    seen = {}
    for cls in DOORS:
        for name in _python_settings(cls):
            s = setting(name, DOORS[cls])
            seen[(s.path, s.algorithm)] = schema_entry(s.path, s.algorithm)
    return seen


def _config_context(path: str, algorithm: str | None) -> dict:
    """A valid config in which the key ``path`` applies."""
    d = {"dataset": {"name": "sonar"}}
    entry = schema_entry(path, algorithm)
    if entry.when is not None:
        section, (selector, values) = entry.section, entry.when
        d[section] = {selector: algorithm if algorithm in values else values[0]}
        if section == "kernel" and d[section][selector] in KERNELS_WITH_SIGMA:
            d[section]["sigma"] = 1.0
    return d


def _with(d: dict, path: str, value) -> dict:
    section, key = path.split(".")
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
    out.setdefault(section, {})[key] = [value] if path == "prediction.rules" else value
    return out


def _config_cases(kind):
    for (path, alg), entry in _config_paths().items():
        check = entry.check.item if isinstance(entry.check, _ListOf) else entry.check
        for v in outside(check) if kind == "bad" else [inside(check)]:
            for door in ("config", "override"):
                yield pytest.param(door, path, alg, v, id=f"{door}-{path}[{alg}]-{v!r}")


# ----------------------------------------------------------------------------- every door, every setting


def _use(cls, name, value):
    """Build the door with ``name=value`` and train it (fit, or two learn_one)."""
    if cls in ESTIMATORS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls(**{name: value}).fit(X, Y)
    model = cls(**{name: value})
    for x, y in STREAM:
        model.learn_one(x, y)
    model.predict_one({"a": 0.5})
    return model


@pytest.mark.parametrize("cls, name, value", list(_python_cases("bad")))
def test_every_python_door_refuses_a_value_outside_the_table(cls, name, value):
    """The estimators in fit, the online classes in __init__ (before any state), in
    scikit-learn's words with the schema's range."""
    pattern = rf"The '{name}' parameter of {cls.__name__} must be .* Got .* instead"
    if cls in ONLINE:
        with pytest.raises(ValueError, match=pattern):
            cls(**{name: value})
    else:
        with pytest.raises(ValueError, match=pattern):
            _use(cls, name, value)


@pytest.mark.parametrize("door, path, algorithm, value", list(_config_cases("bad")))
def test_every_config_door_refuses_a_value_outside_the_table(door, path, algorithm, value):
    ctx = _config_context(path, algorithm)
    with pytest.raises(ConfigError, match=path.replace(".", r"\.")):
        if door == "config":
            config_from_dict(_with(ctx, path, value))
        else:
            with_overrides(config_from_dict(ctx), {path: [value] if path == "prediction.rules" else value})


@pytest.mark.parametrize("cls, name, value", list(_python_cases("good")))
def test_every_python_door_accepts_a_value_inside_the_table(cls, name, value):
    _use(cls, name, value)


@pytest.mark.parametrize("door, path, algorithm, value", list(_config_cases("good")))
def test_every_config_door_accepts_a_value_inside_the_table(door, path, algorithm, value):
    ctx = _config_context(path, algorithm)
    if door == "config":
        config_from_dict(_with(ctx, path, value))
    else:
        with_overrides(config_from_dict(ctx), {path: [value] if path == "prediction.rules" else value})


@pytest.mark.parametrize("cls", list(DOORS))
def test_each_door_takes_its_ranges_from_the_table(cls):
    """Every parameter of a door that is a setting of the schema is in the door's table, and an
    estimator's scikit-learn constraint for it is that setting (no range written twice)."""
    names = {n for n in inspect.signature(cls.__init__).parameters if n in PATHS}
    assert set(cls._schema_settings) == names
    for name, s in cls._schema_settings.items():
        assert s.path == PATHS[name]
        if cls in ESTIMATORS:
            (constraint,) = cls._parameter_constraints[name]
            assert constraint.setting is s and str(constraint) == s.noun


def test_the_python_wording_is_the_schemas():
    msg = "The 'sigma' parameter of KernelPerceptron must be a positive number. Got -1 instead."
    with pytest.raises(ValueError, match=msg):
        online.KernelPerceptron(sigma=-1)
    with pytest.raises(ValueError, match=msg.replace("KernelPerceptron", "VotedPerceptron")):
        VotedPerceptron(kernel="gaussian", sigma=-1).fit(X, Y)
    with pytest.raises(ConfigError, match="kernel.sigma must be a positive number, got -1"):
        config_from_dict({"dataset": {"name": "sonar"}, "kernel": {"type": "gaussian", "sigma": -1}})
    with pytest.raises(ValueError, match=r"Got 'rbf' instead \(did you mean 'gaussian'\?\)"):
        check_setting("kernel", "rbf", "KernelPerceptron")
    assert setting("alpha_bound").noun == "an integer >= 1, None or math.inf"  # no YAML spellings in Python
    assert check_setting("degree", 2.0, "X") == 2


def test_keyword_only_parameters():
    for cls in ESTIMATORS:
        with pytest.raises(TypeError):
            cls("linear")
    assert BudgetPerceptron(algorithm="rbp").algorithm == "rbp"


# ----------------------------------------------------------------------------- a refused learn_one


def _refusals():
    nan = float("nan")
    return {
        "nan feature of a new class": ({0: nan}, "zzz"),
        "nan feature": ({"a": nan}, 0),
        "new feature with a text value": ({"new": "red"}, 0),
        "feature beyond float64's range": ({"new": 1e200}, 1),
        "x not a dict": ([1.0, 2.0], 0),
        "label None": ({"new": 1.0}, None),
        "label NaN": ({"new": 1.0}, nan),
        "label of another type": ({"new": 1.0}, True),
        "unhashable label": ({"new": 1.0}, [0]),
    }


def _trained(cls, classes=None):
    model = cls(**({} if classes is None else {"classes": classes}))
    for x, y in STREAM:
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("classes", [None, [0, 1]])
@pytest.mark.parametrize("case", list(_refusals()))
@pytest.mark.parametrize("cls", list(ONLINE))
def test_a_refused_learn_one_changes_nothing(cls, case, classes):
    """x and y are checked before the model registers a feature or a class: the refused call leaves
    the model pickle-equal, with the same predictions (before: 'zzz' was registered and predicted)."""
    model = _trained(cls, classes)
    probes = [{"a": 0.5}, {"a": -3.0, "b": 1.0}, {"b": 4.0}, {"zzz": 1.0}]
    before, predicted = pickle.dumps(model), [model.predict_one(x) for x in probes]
    scores = [model.decision_one(x) for x in probes]
    x, y = _refusals()[case]
    with pytest.raises(ValueError):
        model.learn_one(x, y)
    assert pickle.dumps(model) == before
    assert [model.predict_one(x) for x in probes] == predicted
    assert [model.decision_one(x) for x in probes] == scores


def test_a_class_outside_the_given_classes_changes_nothing():
    for cls in ONLINE:
        model = _trained(cls, [0, 1])
        before = pickle.dumps(model)
        with pytest.raises(ValueError, match="not in classes"):
            model.learn_one({"new": 1.0}, 2)
        assert pickle.dumps(model) == before


@pytest.mark.parametrize("classes", [[0, None], [0, float("nan")], [1, True]])
def test_classes_that_are_no_labels_are_refused(classes):
    for cls in ONLINE:
        with pytest.raises(ValueError):
            cls(classes=classes)


# ----------------------------------------------------------------------------- the size guard


@pytest.mark.parametrize("cls", list(ESTIMATORS))
def test_fit_refuses_what_the_size_guard_refuses_before_training(cls, monkeypatch):
    """``epochs=1e12`` on 6 examples: refused at once with the estimate, before any training (the
    training step fails the test if reached); before, VotedPerceptron grew past 7 GB."""
    def reached(*a, **k):
        raise AssertionError("training started")

    monkeypatch.setattr(cls, "_fit_sequence", reached)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"The 'epochs' parameter of \w+ must be at most 3.33e\+10 with 6 "
                                         r"examples .* Got 1e\+12 instead: 6e\+12 training steps"):
        cls(epochs=1e12).fit(X, Y)
    assert time.perf_counter() - t0 < 5


def test_fit_and_plab_run_share_the_limits(monkeypatch):
    """The estimators and check_run_size refuse the same run (one unit, one checkpoint): the
    limit is bounds.MAX_TRAIN_STEPS, read when called."""
    cfg = config_from_dict({"dataset": {"name": "sonar"}, "training": {"epochs": 1e6, "curve_every": None}})
    n = 6
    for steps_limit, refused in [(n * 1e6, False), (n * 1e6 - 1, True)]:
        monkeypatch.setattr(bounds, "MAX_TRAIN_STEPS", steps_limit)
        assert (bounds.over_limit(bounds.estimate(cfg, n)) is not None) == refused
        if refused:
            with pytest.raises(ConfigError, match="training steps"):
                bounds.check_run_size(cfg, n)
            with pytest.raises(ValueError, match="size guard"):
                VotedPerceptron(epochs=1e6).fit(X, Y)
        else:
            bounds.check_run_size(cfg, n)


def test_partial_fit_refuses_a_sequence_beyond_the_size_guard(monkeypatch):
    monkeypatch.setattr(bounds, "MAX_TRAIN_STEPS", 8)
    clf = VotedPerceptron().partial_fit(X, Y, classes=[0, 1])
    with pytest.raises(ValueError, match="partial_fit would train on a sequence of 12 steps"):
        clf.partial_fit(X, Y)
