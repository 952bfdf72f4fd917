"""The lambda-trick's two readings (Khardon & Wachman 2007, §2.2): eq. (1) as printed (``indicator``:
``y lambda K(x, x)`` once x has caused an update) and the dual-form convention of the papers cited for
the trick (``diagonal``: ``lambda K(x, x)`` on the kernel's diagonal, so ``y eta alpha_x lambda K(x, x)``),
the jitted engine against tests/naive.py, exactly, for both."""

from pathlib import Path

import numpy as np
import pytest

from perceptron_lab.config.load import load_config, with_overrides
from perceptron_lab.engine.perceptron import PerceptronParams, label_matrix, resolve_params, train
from perceptron_lab.run.spec import algorithm_settings
from perceptron_lab.errors import PlabError
from perceptron_lab.engine.kernels import Kernel

from tests.engine.test_perceptron import KERNELS, PRIMAL_KERNELS, run_both

ROOT = Path(__file__).resolve().parents[3]

LAMBDA_VARIANTS = [
    dict(lam=0.5),
    dict(eta=0.5, lam=2.0, tau_abs=1.0),
    # dyadic values keep both implementations' arithmetic exact, so exact ties compare equal
    dict(eta=0.125, theta_init=5.0, C=5.0, tau_abs=1.0, lam=0.25, alpha_bound=3),
]


@pytest.mark.parametrize("diagonal", [False, True], ids=["indicator", "diagonal"])
@pytest.mark.parametrize("variant", LAMBDA_VARIANTS, ids=lambda v: ",".join(v))
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_engine_matches_naive_for_both_lambda_readings(kernel, variant, n_classes, diagonal):
    # the whole update sequence is compared up to the last checkpoint; two checkpoints (one inside
    # the second pass, where the diagonal term has grown) keep the slow reference's refits few
    run_both(kernel, dict(variant, lam_diagonal=diagonal), n_classes, seed=11 + n_classes, form="dual",
             checkpoints=(1, 2.5))


@pytest.mark.parametrize("diagonal", [False, True], ids=["indicator", "diagonal"])
@pytest.mark.parametrize("variant", LAMBDA_VARIANTS, ids=lambda v: ",".join(v))
@pytest.mark.parametrize("kernel", PRIMAL_KERNELS, ids=lambda k: k.describe())
@pytest.mark.parametrize("n_classes", [2, 3])
def test_primal_loop_matches_naive_for_both_lambda_readings(kernel, variant, n_classes, diagonal):
    log = run_both(kernel, dict(variant, lam_diagonal=diagonal), n_classes, seed=21 + n_classes, form="primal")
    assert log.info.get("loop") == "linear"


def _contradictory(diagonal, eta=0.5, lam=1.5, tau_abs=1.0, epochs=5):
    # two copies of x = 1 with opposite labels, linear kernel (K(x, x) = 1), theta = 0
    X = np.array([[1.0], [1.0]])
    Y = label_matrix(np.array([1, 0]), 2)[:, :1]
    params = PerceptronParams(eta=eta, lam=lam, tau_abs=tau_abs, lam_diagonal=diagonal)
    return train(X, Y, Kernel("linear"), params, np.arange(2), epochs, [epochs])


@pytest.mark.parametrize("form", ["primal", "dual"])
def test_the_readings_differ_where_the_term_grows_with_the_updates(form):
    # Worked by hand. Indicator: after one update each, the term y lam K(x, x) = 1.5 > tau = 1, so
    # steps 2 and 3 are correct and training stops after 2 updates. Diagonal: after one update the
    # term is eta * 1 * lam = 0.75 <= tau, so each copy updates again (steps 2, 3); after two it is
    # 1.5 and training stops after 4 updates.
    for diagonal, steps in ((False, [0, 1]), (True, [0, 1, 2, 3])):
        X = np.array([[1.0], [1.0]])
        Y = label_matrix(np.array([1, 0]), 2)[:, :1]
        params = PerceptronParams(eta=0.5, lam=1.5, tau_abs=1.0, lam_diagonal=diagonal)
        log = train(X, Y, Kernel("linear"), params, np.arange(2), 5, [5], form=form, chunk_size=2)
        assert log.upd_step.tolist() == steps, (diagonal, form)


def test_the_readings_agree_when_eta_alpha_is_one():
    # eta = 1 and one update per example: eta * alpha_x = 1, both terms are y lam K(x, x)
    a, b = _contradictory(False, eta=1.0, tau_abs=0.0), _contradictory(True, eta=1.0, tau_abs=0.0)
    assert a.upd_step.tolist() == b.upd_step.tolist() == [0, 1]


def test_lambda_term_config_key_reaches_the_engine():
    cfg = load_config(ROOT / "configs/kw2007/base.yaml")
    assert cfg.algorithm.lambda_term == "indicator"
    # the default is left out of the written config, so configs without the key keep their keys
    assert "lambda_term" not in cfg.to_dict()["algorithm"]
    diag = with_overrides(cfg, {"algorithm.lambda_term": "diagonal", "algorithm.lambda": 0.5})
    assert diag.to_dict()["algorithm"]["lambda_term"] == "diagonal"
    kd = np.array([2.0, 4.0])
    assert resolve_params(algorithm_settings(diag.algorithm), kd).lam_diagonal is True
    assert resolve_params(algorithm_settings(cfg.algorithm), kd).lam_diagonal is False


def test_lambda_term_rejects_an_unknown_reading():
    cfg = load_config(ROOT / "configs/kw2007/base.yaml")
    with pytest.raises(PlabError, match="lambda_term"):
        with_overrides(cfg, {"algorithm.lambda_term": "diagonl"})
