"""The Khardon & Wachman cause notes (results/causes.yaml) point at experiments the repository holds:
every config, test or script a note names exists, so the evidence behind a note can be rerun."""

import re
from pathlib import Path

from perceptron_lab.report.causes import load_rules

ROOT = Path(__file__).resolve().parents[3]
#: Paths a note may cite: a packaged config, a test (optionally ``::name``) or a module of the paper.
CITED = re.compile(r"(configs/[\w./-]+\.yaml|tests/[\w/]+\.py(?:::\w+)?|perceptron_lab/[\w/]+\.py)")


def _kw_rules():
    return [r for r in load_rules(ROOT / "results" / "causes.yaml") if r.table.startswith("kw2007")]


def test_every_path_a_kw_cause_note_cites_exists():
    cited = [(r.table, m) for r in _kw_rules() for m in CITED.findall(" ".join(r.note.split()))]
    assert cited, "no Khardon & Wachman note cites an experiment"
    for table, ref in cited:
        path, _, test = ref.partition("::")
        if path.startswith("configs/"):
            path = "perceptron_lab/" + path   # configs/ is the packaged perceptron_lab/configs/
        assert (ROOT / path).is_file(), f"{table}: the note cites {ref}, which does not exist"
        if test:
            assert re.search(rf"^def {test}\(", (ROOT / path).read_text(), re.M), f"{table}: no {ref}"


def test_every_unexplained_kw_note_names_an_experiment_that_exists():
    module = re.compile(r"python -m ([\w.]+)")
    result = re.compile(r"(results/[\w./-]+\w)")
    for r in _kw_rules():
        note = " ".join(r.note.split())
        if r.cause != "unexplained":
            continue
        cited = CITED.findall(note) + module.findall(note) + result.findall(note)
        assert cited, f"{r.table} {r.block or ''} {r.row or ''}: an unexplained note names no experiment"
        for name in module.findall(note):
            path = ROOT / (name.replace(".", "/") + ".py")
            assert path.is_file(), f"{r.table}: the note runs {name}, which does not exist"
        for ref in result.findall(note):
            assert (ROOT / ref).exists(), f"{r.table}: the note cites {ref}, which does not exist"
