"""Random and mutated YAML files through the real command: every one either loads or fails with
one-line errors and exit status 2 — never a traceback, never a hang."""

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perceptron_lab.cli.main import main

VALID = {
    "dataset": {"name": "sonar"},
    "kernel": {"type": "poly", "degree": 2, "scale": 4.0},
    "algorithm": {"name": "perceptron", "eta": 0.1, "theta_init": "avg_sq_norm", "C": "theta_init",
                  "tau": 0.5, "lambda": 0.25, "alpha_bound": 5},
    "training": {"epochs": 3, "checkpoints": [0.5, 1, 3], "permutations": 2, "seed": 1},
    "prediction": {"rules": ["last", "vote"], "vote_weight": "correct"},
    "evaluation": {"mode": "kfold", "folds": 3, "grid": {"algorithm.tau": [0, 0.5]}},
    "output": {"figures": False},
}

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["inf", "-inf", ".nan", "avg_sq_norm", "poly", "1e309", "lats"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                      max_leaves=12)
paths = st.sampled_from([(s, k) for s, sec in VALID.items() for k in sec] + [(s, None) for s in VALID])


def mutate(cfg, path, value, action):
    import copy

    cfg = copy.deepcopy(cfg)
    sec, key = path
    if action == "delete":
        if key is None:
            cfg.pop(sec, None)
        else:
            cfg[sec].pop(key, None)
    elif action == "set":
        if key is None:
            cfg[sec] = value
        else:
            cfg[sec][key] = value
    else:  # rename: a misspelt key
        if key is not None and key in cfg[sec]:
            cfg[sec][key + "x"] = cfg[sec].pop(key)
    return cfg


def check_file(tmp_path, data: bytes):
    p = tmp_path / "fuzz.yaml"
    p.write_bytes(data)
    r = CliRunner().invoke(main, ["config", "check", str(p)], catch_exceptions=True)
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert r.exit_code in (0, 2), (r.exit_code, r.output)
    assert "Traceback" not in r.output
    if r.exit_code == 2:
        lines = [l for l in r.output.splitlines() if l.strip()]
        assert lines and all(l.startswith("plab: error: ") and str(p) in l for l in lines), r.output


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(path=paths, value=values, action=st.sampled_from(["set", "delete", "rename"]))
def test_mutated_configs(tmp_path, path, value, action):
    cfg = mutate(VALID, path, value, action)
    try:
        text = yaml.safe_dump(cfg, allow_unicode=True)
    except (yaml.YAMLError, ValueError, OverflowError):
        return
    check_file(tmp_path, text.encode("utf-8"))


@SETTINGS
@given(data=st.binary(max_size=300))
def test_binary_garbage(tmp_path, data):
    check_file(tmp_path, data)


@SETTINGS
@given(text=st.text(max_size=200))
def test_random_text(tmp_path, text):
    check_file(tmp_path, text.encode("utf-8", "surrogatepass"))


def test_special_files(tmp_path):
    for data in (b"", b"\n\n# only a comment\n", b"dataset: {name: sonar}\ndataset: {name: bupa}\n",
                 b"- a\n- b\n", b"dataset: {name: sonar}\ntraining: {epochs: .nan}\n",
                 b"dataset: {name: sonar}\ntraining: {epochs: 1e400}\n", b"\xff\xfe\x00garbage",
                 b"dataset: &a [*a]\n", b"a: " + b"[" * 500 + b"]" * 500 + b"\n"):
        check_file(tmp_path, data)
