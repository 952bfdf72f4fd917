"""``plab run`` says in its first line what ran (algorithm, kernel, data set, protocol); its help
describes the quickstart as the config it runs; ``plab config docs`` documents ``extends``."""

import yaml
from click.testing import CliRunner

from perceptron_lab.cli.main import main
from perceptron_lab.config.checks import PACKAGE_CONFIG_DIR
from perceptron_lab.config.docs import key_docs, markdown, text


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_the_first_line_says_what_ran(tmp_path):
    cfg = tmp_path / "bud.yaml"
    cfg.write_text("name: bud\ndataset: {name: sonar}\nkernel: {type: gaussian, sigma: 3}\n"
                   "algorithm: {name: stoptron, budget: 10}\ntraining: {epochs: 1}\n"
                   "evaluation: {mode: kfold, folds: 3}\noutput: {figures: false}\n")
    r = invoke("run", cfg, "-q", "--out", tmp_path / "out")
    assert r.exit_code == 0, r.output
    # sonar: 208 examples of 60 features (UCI's description of the data set)
    assert r.output.splitlines()[0] == ("ran the Stoptron, gaussian kernel (sigma 3), on sonar (208 examples, 60 "
                                        "features); 3-fold cross-validation, 1 epoch")
    r = invoke("run", cfg, "-q", "--out", tmp_path / "sweep", "-m", "algorithm.budget=5,10", "training.epochs=2")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].endswith("; 3-fold cross-validation, 2 epochs; grid over algorithm.budget: 5, 10")


def test_the_help_describes_the_quickstart_it_runs():
    quick = yaml.safe_load((PACKAGE_CONFIG_DIR / "quickstart.yaml").read_text())
    r = invoke("run", "--help")
    words = " ".join(r.output.split())
    assert "voted perceptron" not in words   # the quickstart is Khardon & Wachman's perceptron, four rules
    assert quick["algorithm"]["name"] == "perceptron" and "perceptron" in words
    assert quick["dataset"]["name"] in words and f"{quick['evaluation']['folds']}-fold" in words
    for key in quick["evaluation"]["grid"]:
        assert key in words
    assert "says what ran" in words


def test_config_docs_document_extends():
    keys = [d.key for d in key_docs()]
    assert "extends" in keys and keys.index("extends") < keys.index("dataset.name")
    assert "\nextends\n" in text() and "| `extends` |" in markdown()
    doc = next(d for d in key_docs() if d.key == "extends")
    assert "package:NAME.yaml" in doc.description and "relative" in doc.description
