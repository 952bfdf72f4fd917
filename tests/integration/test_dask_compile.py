"""The compile step of a Dask run: every worker compiles the engine before the timed parts."""

import pytest
from click.testing import CliRunner

distributed = pytest.importorskip("distributed")

from perceptron_lab.cli.main import main  # noqa: E402
from perceptron_lab.config.load import config_from_dict  # noqa: E402
from perceptron_lab.run.executors import compile_on_dask  # noqa: E402
from perceptron_lab.run.inputs import load_data  # noqa: E402

CONFIG = """
name: dask_compile
dataset:
  name: sonar
training:
  epochs: 1
  permutations: 2
prediction:
  rules: [last, vote]
evaluation:
  mode: kfold
  folds: 2
output: {figures: false}
"""


class _Step:
    """A stand-in for the tqdm bar: what compile_on_dask reports to it."""

    def __init__(self):
        self.total, self.n = None, 0

    def reset(self, total=None):
        self.total, self.n = total, 0

    def update(self, n=1):
        self.n += n


def _compiled_on_worker():
    from perceptron_lab.engine import linear

    return len(linear._perceptron_groups.signatures)


@pytest.fixture()
def cluster():
    # fresh worker processes: nothing is compiled in them yet
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", processes=True,
                                  dashboard_address=None) as c:
        yield c


def test_compile_on_dask_warms_every_worker(cluster):
    import yaml

    from perceptron_lab.run.plan import make_plan

    cfg = config_from_dict(yaml.safe_load(CONFIG))
    ds = load_data(cfg)
    plan = make_plan(cfg, ds)
    part = plan.parts[0]
    with distributed.Client(cluster.scheduler_address) as client:
        assert set(client.run(_compiled_on_worker).values()) == {0}
        step = _Step()
        assert compile_on_dask(plan, [(part, ds)], cluster.scheduler_address, step) == 2
        assert (step.total, step.n) == (2, 2)
        assert min(client.run(_compiled_on_worker).values()) >= 1


def test_a_dask_run_shows_the_compile_step(cluster, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    r = CliRunner().invoke(main, ["run", str(cfg), "--out", str(tmp_path / "out"), "--executor", "dask",
                                  "--scheduler", cluster.scheduler_address], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "compiling the engine on every Dask worker" in r.output
    log = (tmp_path / "out" / "progress.log").read_text()
    assert "compile: the engine is ready" in log
    assert log.index("compile:") < log.index(" part 1/")
