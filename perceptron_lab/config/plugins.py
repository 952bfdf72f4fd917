"""Paper plug-ins: what the core knows of the papers it reproduces, which is their names.

A paper is a package that defines ``PAPER``, a :class:`Paper`. The papers shipped with plab live
in ``perceptron_lab/papers/<name>/`` (found by listing that folder); another installed package
adds one through the entry-point group ``perceptron_lab.papers`` (``name = "pkg.module"``). A
config names the table it reproduces as ``paper: <name>/<table>`` (e.g. ``kw2007/table5``); only
such runs are written in a paper's layout and scored against it.

The core never imports a paper by name: a paper is loaded here, from its name, when a run or the
report asks for it. Each paper package holds its reference CSVs (``reference/``), table layouts,
scoring rule and tolerances, figures and any helper of its own.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

from perceptron_lab.errors import ConfigError

PACKAGE = "perceptron_lab.papers"
ENTRY_POINT_GROUP = "perceptron_lab.papers"


@dataclass(frozen=True)
class Paper:
    """A paper plug-in.

    ``write_outputs(cfg, table, out, results, n_train)`` writes a finished run's tables and figures
    in the paper's layout (with their ``*_comparison.csv``) and returns their paths;
    ``combine(results_dir)`` merges the runs of one table into the paper's whole table;
    ``reproduce_figures(results_dir, data_dir)`` draws the paper's figures from finished runs (or
    its own small runs); ``table_notes(table)`` adds lines under a table in the report;
    ``baseline_cells(comparison)`` marks the cells (a boolean Series over a comparison's rows) that
    hold no perceptron-family result (a majority-class baseline, an SVM), which the report counts
    apart; ``tolerance_basis()`` says, one line each, why each of the paper's tolerances is what it is.
    """
    name: str                      # e.g. "kw2007": the prefix of its reference tables and outputs
    title: str                     # e.g. "Khardon & Wachman (2007): noise-tolerant perceptron variants"
    short: str                     # e.g. "Khardon & Wachman"
    tables: tuple                  # the table ids a config may name, e.g. ("table3", "table5")
    scoring_rule: Callable[[], str]
    write_outputs: Callable
    reference_dir: Path
    figures: dict = field(default_factory=dict)        # output stem -> title in words
    not_result_tables: frozenset = frozenset()         # reference tables that hold no results (settings)
    combine: Callable | None = None
    reproduce_figures: Callable | None = None
    table_notes: Callable | None = None
    baseline_cells: Callable | None = None
    tolerance_basis: Callable[[], list] | None = None
    # False: reproduce_figures(results_dir, data_dir, progress=False) trains runs of its own and
    # reads no results, so make reproduce draws the figures beside the configs
    figures_read_runs: bool = True


@lru_cache(maxsize=None)
def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


@lru_cache(maxsize=None)
def names() -> tuple:
    """The names of every paper plug-in, sorted."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = spec.submodule_search_locations if spec is not None else None   # None: no papers package
    found = {m.name for m in pkgutil.iter_modules(list(locations or []))
             if m.ispkg and not m.name.startswith("_")}
    return tuple(sorted(found | set(_entry_points())))


@lru_cache(maxsize=None)
def get(name: str) -> Paper:
    """The plug-in of paper ``name``; KeyError when there is none."""
    if name not in names():
        raise KeyError(f"no paper {name!r}; the papers are {', '.join(names())}")
    module = _entry_points().get(name) or f"{PACKAGE}.{name}"
    return importlib.import_module(module).PAPER


def papers() -> list:
    return [get(n) for n in names()]


def parse_ref(ref: str, where: str = "paper") -> tuple:
    """(Paper, table id) of a config's ``paper: <name>/<table>``; ConfigError when either is unknown."""
    name, _, table = str(ref).partition("/")
    if name not in names():
        raise ConfigError(f"{where} must name a paper's table as <paper>/<table>, one of the papers "
                          f"{', '.join(names())}; got {ref!r}")
    p = get(name)
    if table not in p.tables:
        raise ConfigError(f"{where}: {name} has the tables {', '.join(p.tables)}; got {ref!r}")
    return p, table


def paper_of_table(stem: str):
    """The plug-in whose outputs and reference tables are named ``stem`` (``kw2007_table3...``), or None."""
    for n in names():
        if stem == n or stem.startswith(n + "_"):
            return get(n)
    return None
